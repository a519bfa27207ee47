/* Series colours are Okabe and Ito's colour-blind-safe set, and every series
 * also has its own dash pattern, so none is told apart by colour alone. Text
 * colours keep a contrast of at least 4.5:1 on their backgrounds. Figures keep
 * a minimum width and scroll sideways on a phone instead of shrinking their
 * text below reading size.
 *
 * The script only adds the hover read-out to the plots (one listener per plot
 * looking values up in the plot's data): a <title> per point would mean
 * thousands of hit targets, titles do not show on touch screens, and the
 * markers, tables and icicle boxes carry their own <title>s and text, so the
 * page reads the same without the script. */
#include "cli/html_style.h"

const char cf_html_css[] =
    ":root{--fg:#1a1a1a;--muted:#4d4d4d;--line:#d0d0d0;--live:#0072b2;--footprint:#d55e00;"
    "--pool:#009e73;--arena:#cc79a7}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:var(--fg);background:#fff}\n"
    "main{max-width:1200px;margin:0 auto;padding:12px 16px 40px}\n"
    "h1{font-size:1.5rem;margin:.3em 0}h2{font-size:1.2rem;margin:1.8em 0 .6em;"
    "border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1rem;margin:1.2em 0 "
    ".4em}\n"
    ".meta,.note{color:var(--muted);overflow-wrap:anywhere}\n"
    "nav{display:flex;flex-wrap:wrap;gap:4px 14px;margin:.6em 0}nav a{color:#005a8c}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px}\n"
    ".card{border:1px solid var(--line);border-radius:6px;padding:8px 10px}"
    ".card b{display:block;font-size:1.25rem}\n"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}\n"
    "svg.plot,svg.icicle{display:block;width:100%;min-width:640px;height:auto}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#1a1a1a}svg .ax{fill:#4d4d4d}\n"
    "polyline{fill:none;stroke-width:2;stroke-linejoin:round}\n"
    "polyline.live{stroke:var(--live)}polyline.footprint{stroke:var(--footprint);stroke-width:2.5}"
    "polyline.pool{stroke:var(--pool);stroke-dasharray:7 3}"
    "polyline.arena{stroke:var(--arena);stroke-dasharray:2 3}\n"
    ".grid{stroke:#e8e8e8}.axis,.tick{stroke:#8a8a8a}\n"
    ".mark.peak circle{fill:#fff;stroke:#1a1a1a;stroke-width:2}.mark text{font-weight:600;"
    "paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\n"
    ".mark.oom line{stroke:#b00020;stroke-width:2;stroke-dasharray:4 2}.mark.oom "
    "text{fill:#b00020}\n"
    ".cursor{stroke:#1a1a1a;stroke-width:1;visibility:hidden}\n"
    ".legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:4px 18px}\n"
    ".legend i{display:inline-block;width:26px;border-top:3px solid;vertical-align:middle;"
    "margin-right:6px}.legend .live i{border-color:var(--live)}"
    ".legend .footprint i{border-color:var(--footprint)}"
    ".legend .pool i{border-color:var(--pool);border-top-style:dashed}"
    ".legend .arena i{border-color:var(--arena);border-top-style:dotted}\n"
    ".readout{min-height:1.5em;font-variant-numeric:tabular-nums;color:var(--muted)}\n"
    "table{border-collapse:collapse;width:100%;font-size:14px}"
    "th,td{padding:4px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4}.n{text-align:right;font-variant-numeric:tabular-nums;"
    "white-space:nowrap}caption{text-align:left;color:var(--muted);padding:4px 0}\n"
    ".sev{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;font-weight:600;"
    "color:#fff}.sev.high{background:#b00020}.sev.medium{background:#8a5a00}"
    ".sev.low{background:#555}\n"
    ".findings li{margin:.6em 0}.findings p{margin:.2em 0}\n"
    /* The what-if table: its best allocator, and a trace it does not answer for. */
    "tr.best th,tr.best td{font-weight:600;background:#eef6fb}td.oom{color:#b00020}"
    ".warn{border-left:4px solid #b00020;padding:6px 10px;background:#fdf3f4;"
    "overflow-wrap:anywhere}\n"
    ".icicle rect{stroke:#fff;stroke-width:1}.icicle g:hover rect{stroke:#1a1a1a}\n"
    "code{font:13px ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}\n"
    ":focus-visible{outline:3px solid #0072b2;outline-offset:2px}\n";

const char cf_html_js[] =
    "(function(){\n"
    "function fb(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(b>=1024&&i<4){b/=1024;i++}"
    "return (i?b.toFixed(b<10?2:b<100?1:0):b)+' '+u[i]}\n"
    "function ft(ns){var s=ns/1e9;return s<1e-3?(s*1e6).toFixed(1)+' us':"
    "s<1?(s*1e3).toFixed(2)+' ms':s.toFixed(3)+' s'}\n"
    "function at(p,t){var lo=0,hi=p.length-1,r=-1;while(lo<=hi){var m=(lo+hi)>>1;"
    "if(p[m][0]<=t){r=m;lo=m+1}else hi=m-1}return r<0?0:p[r][1]}\n"
    "document.querySelectorAll('svg.plot').forEach(function(svg){\n"
    "var d=JSON.parse(document.getElementById(svg.dataset.src).textContent),"
    "x0=+svg.dataset.x0,x1=+svg.dataset.x1,te=+svg.dataset.tend||1,"
    "cur=svg.querySelector('.cursor'),tip=document.getElementById(svg.dataset.tip),t=0;\n"
    "function show(v){t=Math.max(0,Math.min(te,v));var x=x0+(x1-x0)*t/te;"
    "cur.setAttribute('x1',x);cur.setAttribute('x2',x);cur.style.visibility='visible';"
    "var s='at +'+ft(t);d.series.forEach(function(k){s+=' \\u00b7 '+k.name+' '+fb(at(k.p,t))});"
    "tip.textContent=s}\n"
    "function move(e){var r=svg.getBoundingClientRect(),w=svg.viewBox.baseVal.width;"
    "show(((e.clientX-r.left)*w/r.width-x0)/(x1-x0)*te)}\n"
    "svg.addEventListener('pointermove',move);svg.addEventListener('pointerdown',move);\n"
    "svg.addEventListener('keydown',function(e){var k=e.key=='ArrowRight'?1:"
    "e.key=='ArrowLeft'?-1:0;if(k){show(t+k*te/100);e.preventDefault()}});\n"
    "});\n"
    "})();\n";
