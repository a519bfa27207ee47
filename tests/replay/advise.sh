#!/bin/sh
# advise.sh CUDAFRAG WORKLOAD WORKLOAD_JAX SNAPSHOTS_PY: `cudafrag advise` on
# PyTorch-like tensor streams of five shapes traced with `cudafrag run --blocks`
# on the simulated device (advise_workload.c). On every one: the advice is the
# lowest predicted peak that fits, the simplest among equals, a change only when
# it beats the run's own setting by more than the models' 3 %, the same figure
# `cudafrag replay` gives for that setting, the same bytes twice. Odd sizes above
# 1 MiB get expandable segments, shapes a cache reuses exactly get "keep"; the
# user's recorded setting is the one compared with; a device too small for it
# gets another setting; a cache's segments and imported snapshots are each said
# for what they are; JAX-like streams of the same shapes (through an XLA
# stand-in) get the smallest XLA_PYTHON_CLIENT_MEM_FRACTION that fits, checked
# against the replay, the user's own XLA settings and XLA's pool regions; the text report of a --blocks run has the one line.
set -u
cudafrag=$1 workload=$2 workload_jax=$3 snapshots=$4
. "$(dirname "$0")/../lib.sh"
need python3
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
cudafrag=$(abs "$cudafrag") workload=$(abs "$workload") workload_jax=$(abs "$workload_jax")
snapshots=$(abs "$snapshots")
scratch
cd "$dir" || exit 1
unset PYTORCH_NO_CUDA_MEMORY_CACHING PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF \
    XLA_PYTHON_CLIENT_ALLOCATOR CUDAFRAG_ARENA CUDAFRAG_BLOCKS PYTHONPATH

# json FILE EXPR: a Python expression over the parsed file (as j), printed.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# traced NAME PROG MODE [run options...]: the workload under cudafrag run --trace.
traced() {
    name=$1 prog=$2 mode=$3
    shift 3
    "$cudafrag" run --sim --trace "$@" --output "$name" -- "$prog" "$mode" \
        >"$name.out" 2>"$name.err" || fail "$name: status $? ($(cat "$name.err"))"
}

# advised NAME [options...]: cudafrag advise, text into NAME.advice and JSON into
# NAME.advice.json.
advised() {
    name=$1
    shift
    "$cudafrag" advise "$@" "$name.cftrace" >"$name.advice" 2>"$name.advice.err" ||
        fail "advise $name: $(cat "$name.advice.err")"
    "$cudafrag" advise --json "$@" "$name.cftrace" >"$name.advice.json" 2>>"$name.advice.err" ||
        fail "advise --json $name: $(cat "$name.advice.err")"
}

# consistent NAME [options...]: the rules every advice keeps (advised NAME
# with the same options before), and the replay's own figure for the advised
# setting.
consistent() {
    name=$1
    shift
    python3 - "$name.advice.json" <<'EOF' || fail "$name: $(cat "$name.advice")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["framework"] == "PyTorch", j["framework"]
for d in j["devices"]:
    ok = [s for s in d["settings"] if "error" not in s and not s["oom"]]
    own, rec = d["own"], d["recommended"]
    if d["advice"] == "none-fits":
        assert not ok and rec is None
        continue
    assert rec is not None and not rec["oom"], rec
    err = d["model_error"]
    low = min(s["peak_reserved_bytes"] for s in ok)
    if d["advice"] == "change":
        # Within the error of the lowest, and beating the run's own by more.
        assert rec["peak_reserved_bytes"] <= low * (1 + err), (rec, low)
        bar = own["peak_reserved_bytes"] * (1 - err)
        if not own["oom"]:
            assert low < bar and rec["peak_reserved_bytes"] < bar, (rec, own)
            assert d["saving_bytes"] == own["peak_reserved_bytes"] - rec["peak_reserved_bytes"]
            assert d["saving_fraction"] > err, d["saving_fraction"]
        # The simplest of those.
        rivals = [s for s in ok if s["peak_reserved_bytes"] <= low * (1 + err)
                  and (own["oom"] or s["peak_reserved_bytes"] < bar)]
        assert rec["knobs_changed"] == min(s["knobs_changed"] for s in rivals), rec
    else:
        assert d["advice"] == "keep" and rec["own"] and not own["oom"], d
        assert low >= own["peak_reserved_bytes"] * (1 - err), (low, own)
        if low < own["peak_reserved_bytes"]:
            assert d["cautions"], "a lower setting within the error without a caution"
    first = d["settings"][0]
    assert "error" not in first and not first["oom"], first
EOF
    rec=$(json "$name.advice.json" "j['devices'][0]['recommended']['model']")
    "$cudafrag" replay --json "$@" --model "$rec" "$name.cftrace" >"$name.replay.json" ||
        fail "$name: replay --model $rec"
    [ "$(json "$name.replay.json" "j['devices'][0]['models'][0]['peak_footprint_bytes']")" = \
      "$(json "$name.advice.json" "j['devices'][0]['recommended']['peak_reserved_bytes']")" ] ||
        fail "$name: advise and replay disagree on $rec"
    "$cudafrag" advise "$@" "$name.cftrace" | cmp -s - "$name.advice" ||
        fail "$name: not the same bytes twice"
}

field() { json "$1.advice.json" "$2"; }

for mode in odd-large fixed small kv-growth streams; do
    t_case=$mode
    traced "$mode" "$workload" "$mode" --blocks
    advised "$mode"
    consistent "$mode"
    grep -q "^your setting: PyTorch's defaults" "$mode.advice" || fail "own setting: $(cat "$mode.advice")"
    [ "$(field "$mode" "j['own_setting_from']")" = recorded ] || fail "not recorded"
done

t_case=odd-large
# Odd sizes above 1 MiB: the cache's splits strand memory, expandable segments do not.
[ "$(field odd-large "j['devices'][0]['advice']")" = change ] || fail "$(cat odd-large.advice)"
field odd-large "j['devices'][0]['recommended']['conf']" | grep -q 'expandable_segments:True' ||
    fail "not expandable segments: $(cat odd-large.advice)"
grep -q '^  use: PYTORCH_CUDA_ALLOC_CONF=.*expandable_segments:True' odd-large.advice ||
    fail "no use: line: $(cat odd-large.advice)"
[ "$(field odd-large "[s['peak_reserved_bytes'] for s in j['devices'][0]['settings'] if s['conf']=='expandable_segments:True'][0] < j['devices'][0]['own']['peak_reserved_bytes']")" = True ] ||
    fail "expandable segments not below the defaults"

t_case=fixed
# Shapes every cache reuses exactly: nothing beats the defaults by more than the error.
[ "$(field fixed "j['devices'][0]['advice']")" = keep ] || fail "$(cat fixed.advice)"
grep -q "^  use: keep your setting (PyTorch's defaults)" fixed.advice || fail "$(cat fixed.advice)"

t_case=user-setting
env PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True,pinned_use_host_register:True' \
    "$cudafrag" run --sim --blocks --trace --output user -- "$workload" odd-large \
    >user.out 2>user.err || fail "$(cat user.err)"
advised user
consistent user
grep -q "^your setting: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,pinned_use_host_register:True (recorded at start)" user.advice ||
    fail "$(cat user.advice)"
grep -q "not modelled, left out: pinned_use_host_register:True" user.advice || fail "$(cat user.advice)"
[ "$(field user "j['devices'][0]['own']['conf']")" = expandable_segments:True ] || fail "own conf"
[ "$(field user "j['devices'][0]['own']['peak_reserved_bytes']")" = \
  "$(field odd-large "[s['peak_reserved_bytes'] for s in j['devices'][0]['settings'] if s['conf']=='expandable_segments:True'][0]")" ] ||
    fail "the user's setting is not replayed as expandable segments"

t_case=user-async
env PYTORCH_ALLOC_CONF='backend:cudaMallocAsync' \
    "$cudafrag" run --sim --blocks --trace --output async -- "$workload" fixed \
    >async.out 2>async.err || fail "$(cat async.err)"
advised async
consistent async
[ "$(field async "j['variable']")" = PYTORCH_ALLOC_CONF ] || fail "variable"
[ "$(field async "j['devices'][0]['own']['model']")" = async-pool ] || fail "$(cat async.advice)"
# The line to use names the variable the user set.
if [ "$(field async "j['devices'][0]['advice']")" = change ]; then
    grep -q '^  use: \(PYTORCH_ALLOC_CONF=\|unset PYTORCH_ALLOC_CONF\)' async.advice || fail "$(cat async.advice)"
fi

t_case=device-memory
# A device of exactly expandable segments' peak: the defaults run out of memory
# there, even after PyTorch's free-and-retry.
exp=$(field odd-large "[s['peak_reserved_bytes'] for s in j['devices'][0]['settings'] if s['conf']=='expandable_segments:True'][0]")
advised odd-large --device-memory "$exp"
consistent odd-large --device-memory "$exp"
[ "$(field odd-large "j['devices'][0]['own']['oom']")" = True ] || fail "the defaults fit in $exp"
[ "$(field odd-large "j['devices'][0]['advice']")" = change ] || fail "$(cat odd-large.advice)"
[ "$(field odd-large "j['devices'][0]['recommended']['peak_reserved_bytes'] <= $exp")" = True ] ||
    fail "$(cat odd-large.advice)"
grep -q "your setting runs out of memory" odd-large.advice || fail "$(cat odd-large.advice)"
advised odd-large --device-memory 1M
[ "$(field odd-large "j['devices'][0]['advice']")" = none-fits ] || fail "$(cat odd-large.advice)"
grep -q "^  use: none of the settings tried fits in 1.00 MiB" odd-large.advice || fail "$(cat odd-large.advice)"

t_case=report
"$cudafrag" report odd-large.cftrace >report.txt || fail "cudafrag report"
grep -q "^-- setting to use (PyTorch; every setting: cudafrag advise odd-large.cftrace) --" report.txt ||
    fail "no section: $(cat report.txt)"
grep -q "^  device 0: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: predicted peak reserved" report.txt ||
    fail "$(grep -A3 'setting to use' report.txt)"
tail -n 1 report.txt | grep -q '^==== end of cudafrag report ====$' || fail "the report's end moved"
"$cudafrag" report fixed.cftrace | grep -q "^  device 0: keep your setting (PyTorch's defaults)" ||
    fail "fixed: no keep line"
"$cudafrag" report --json odd-large.cftrace >report.json || fail "report --json"
grep -q 'setting to use' report.json && fail "a section in the JSON report"
traced plain "$workload" odd-large
"$cudafrag" report plain.cftrace | grep -q 'setting to use' && fail "a section without --blocks"

# html_advice NAME: the HTML page's "setting to use" says what the text report's
# section does, word for word, and for JAX (whose grid is the same in both) the
# bytes advise --json gives.
html_advice() {
    "$cudafrag" report --html "$1.html" "$1.cftrace" 2>"$1.html.err" || fail "report --html $1"
    "$cudafrag" report "$1.cftrace" >"$1.report" || fail "report $1"
    "$cudafrag" advise --json "$1.cftrace" >"$1.html-advice.json" || fail "advise --json $1"
    python3 - "$1.html" "$1.report" "$1.html-advice.json" <<'EOF' || fail "$1: the page's advice"
import html, json, re, sys
page, text, j = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
sec = re.search(r'<section id="advice">(.*?)</section>', page, re.S)
assert sec, "no advice section"
sec = sec.group(1)
assert ("<h2>Setting to use (%s)</h2>" % j["framework"]) in sec, sec
p = re.search(r'<p class="advice" data-device="0" data-advice="([a-z-]+)">(.*?)</p>', sec, re.S)
assert p, sec
words = html.unescape(re.sub(r"<[^>]+>", "", p.group(2))).rstrip(".")
line = re.search(r"^  device 0: (.*)$", text.split("\n-- setting to use (")[1], re.M).group(1)
assert words == "Device 0: " + line, (words, line)
d = j["devices"][0]
if j["framework"] == "JAX":
    assert p.group(1) == d["advice"], (p.group(1), d["advice"])
    shown = [int(v) for v in re.findall(r'data-bytes="(\d+)"', p.group(2))]
    assert shown == [d["recommended"]["peak_reserved_bytes"], d["saving_bytes"]], (shown, d)
EOF
}
html_advice odd-large
html_advice small
"$cudafrag" report --html plain.html plain.cftrace 2>/dev/null || fail "report --html plain"
grep -q 'id="advice"' plain.html && fail "an HTML advice without --blocks"

# jax_rules NAME: the JAX advice (xla-bfc model) on every shape: the smallest
# preallocated fraction that fits, with the headroom, at three decimals; the
# replay's own figure for it, and fitting in pools up to 5 % larger.
jax_rules() {
    name=$1
    python3 - "$name.advice.json" "$name.cftrace" "$cudafrag" <<'EOF' || fail "$name: $(cat "$name.advice")"
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
assert j["framework"] == "JAX" and j["note"] is None, (j["framework"], j["note"])
d = j["devices"][0]
total, need, rec = d["device_memory_bytes"], d["jax_need_bytes"], d["recommended"]
assert d["advice"] == "change" and rec["model"].startswith("xla-bfc:preallocate=True"), d
frac = float(rec["conf"].split("=")[1])
assert rec["conf"] == "XLA_PYTHON_CLIENT_MEM_FRACTION=%g" % frac, rec["conf"]
assert frac * total >= need * 1.05 and frac <= 1, (frac, need)
assert rec["peak_reserved_bytes"] == int(total * frac) // 256 * 256, rec  # the limit, in 256 B
assert need >= d["peak_live_bytes"], (need, d["peak_live_bytes"])
grow = [s for s in d["settings"] if s["conf"] == "XLA_PYTHON_CLIENT_PREALLOCATE=false"]
assert len(grow) == 1 and grow[0]["driver_calls"] > 1, d["settings"]
assert d["own"]["peak_reserved_bytes"] == int(total * 0.75), d["own"]
def replay(f):
    out = subprocess.run([sys.argv[3], "replay", "--json", "--model",
                          "xla-bfc:mem_fraction=%.17g" % f, sys.argv[2]],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["devices"][0]["models"][0]
r = replay(frac)
assert r["peak_footprint_bytes"] == rec["peak_reserved_bytes"] and not r["oom"], r
for k in range(1, 6):  # and in pools up to 5 % larger
    assert not replay(frac * (1 + 0.01 * k))["oom"], (frac, k)
assert not replay(need / total)["oom"], need  # need itself was seen to fit
EOF
}

for mode in odd-large fixed small kv-growth streams; do
    t_case=jax-$mode
    traced "jax-$mode" "$workload_jax" "$mode" --blocks
    advised "jax-$mode"
    jax_rules "jax-$mode"
done
t_case=jax
grep -q "^your setting: JAX's defaults" jax-odd-large.advice || fail "$(cat jax-odd-large.advice)"
# The fraction is of the GPU it is for: --device-memory names another.
"$cudafrag" advise --json --device-memory 8G jax-odd-large.cftrace >jax-8g.json ||
    fail "advise --device-memory 8G"
python3 - jax-8g.json jax-odd-large.advice.json <<'EOF' || fail "--device-memory: $(cat jax-8g.json)"
import json, sys
small, big = (json.load(open(f))["devices"][0] for f in sys.argv[1:])
assert small["device_memory_bytes"] == 8 << 30, small["device_memory_bytes"]
assert abs(small["jax_need_bytes"] / big["jax_need_bytes"] - 1) < 0.01, (small, big)
f = float(small["recommended"]["conf"].split("=")[1])
assert f * (8 << 30) >= small["jax_need_bytes"] * 1.05, f
assert f > float(big["recommended"]["conf"].split("=")[1]) * 1.9, f
EOF
grep -q "^  use: XLA_PYTHON_CLIENT_MEM_FRACTION=0\.[0-9]*$" jax-odd-large.advice ||
    fail "$(cat jax-odd-large.advice)"
"$cudafrag" report jax-odd-large.cftrace >jax.report || fail "report of the JAX trace"
grep -q "^-- setting to use (JAX; every setting: cudafrag advise jax-odd-large.cftrace) --" jax.report &&
    grep -q "^  device 0: XLA_PYTHON_CLIENT_MEM_FRACTION=0\.[0-9]*: predicted peak reserved" jax.report ||
    fail "no JAX section in the report: $(cat jax.report)"
# Two GPUs in one process: JAX's variables hold for both, so one setting, the
# lowest by the devices' peaks summed among those fitting on each, its fraction
# enough for the device that needs the most; the replay fits it on both.
SIMCUDA_DEVICES=2 traced jax-two "$workload_jax" two-devices --blocks
advised jax-two
grep -q "^one setting for all 2 devices" jax-two.advice || fail "$(cat jax-two.advice)"
python3 - jax-two.advice.json jax-two.cftrace "$cudafrag" <<'EOF' || fail "jax-two: $(cat jax-two.advice)"
import json, subprocess, sys
devs = json.load(open(sys.argv[1]))["devices"]
assert len(devs) == 2, len(devs)
recs = [d["recommended"]["conf"] for d in devs]
assert recs[0] == recs[1] and "MEM_FRACTION" in recs[0], recs
frac = float(recs[0].split("=")[1])
for d in devs:
    assert frac * d["device_memory_bytes"] >= d["jax_need_bytes"] * 1.05, (frac, d["jax_need_bytes"])
total = {}
for d in devs:
    for s in d["settings"]:
        ok = "error" not in s and not s["oom"]
        t = total.setdefault(s["conf"], [0, True])
        t[0] += s["peak_reserved_bytes"] if ok else 0
        t[1] = t[1] and ok
fit = {c: t[0] for c, t in total.items() if t[1]}
assert fit[recs[0]] == min(fit.values()), (recs[0], fit)
out = subprocess.run([sys.argv[3], "replay", "--json", "--model", "xla-bfc:mem_fraction=%g" % frac,
                      sys.argv[2]], capture_output=True, text=True, check=True).stdout
devs_out = json.loads(out)["devices"]
assert len(devs_out) == 2 and not any(dv["models"][0]["oom"] for dv in devs_out), devs_out
EOF
# The user's own settings, recorded at start, are the ones compared with.
XLA_PYTHON_CLIENT_MEM_FRACTION=.5 traced jax-own "$workload_jax" odd-large --blocks
advised jax-own
[ "$(field jax-own "(j['own_setting'], j['devices'][0]['own']['peak_reserved_bytes'])")" = \
    "('XLA_PYTHON_CLIENT_MEM_FRACTION=0.5', 8589934592)" ] || fail "$(cat jax-own.advice)"
XLA_PYTHON_CLIENT_PREALLOCATE=false traced jax-grow "$workload_jax" odd-large --blocks
advised jax-grow
[ "$(field jax-grow "j['devices'][0]['own']['conf']")" = "XLA_PYTHON_CLIENT_PREALLOCATE=false" ] ||
    fail "$(cat jax-grow.advice)"
# Without --blocks the allocations are XLA's pool regions: no advice.
traced jax-pool "$workload_jax" odd-large
advised jax-pool
grep -q "^no advice: these allocations are XLA's pool regions" jax-pool.advice ||
    fail "$(cat jax-pool.advice)"
"$cudafrag" report jax-pool.cftrace | grep -q 'setting to use' && fail "a section for JAX's pool"
t_case=jax-html
html_advice jax-odd-large
html_advice jax-kv-growth

t_case=segments
# Without --blocks, 2 MiB-multiple sizes from libc10_cuda.so are the cache's segments.
traced segments "$workload" fixed
advised segments
grep -q "^no advice: these allocations are PyTorch's cache segments" segments.advice ||
    fail "$(cat segments.advice)"

t_case=import
python3 "$snapshots" "$dir" >/dev/null || fail "snapshots.py"
"$cudafrag" import --output snap.cftrace good-protocol4.pickle >/dev/null || fail "import"
advised snap --device-memory 1G
consistent snap --device-memory 1G
[ "$(field snap "(j['imported'], j['own_setting_from'])")" = "(True, 'not recorded')" ] ||
    fail "$(cat snap.advice)"
grep -q "^your setting: not recorded in this trace (an imported snapshot): taken as PyTorch's defaults" snap.advice ||
    fail "$(cat snap.advice)"

t_case=header
# The trace records the variable at start, compatibly: a key readers ignore.
python3 - user.cftrace <<'EOF' || fail "header"
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<I", b, 12)[0]
h = b[16:16 + n].decode().splitlines()
assert "framework_env=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,pinned_use_host_register:True" in h, h
assert any(l.startswith("framework_vars=PYTORCH_CUDA_ALLOC_CONF,") for l in h), h
EOF

t_case=usage
"$cudafrag" advise >out 2>err
[ $? -eq 2 ] && grep -q "needs a trace file" err || fail "no trace: $(cat err)"
"$cudafrag" advise --device-memory lots fixed.cftrace >out 2>err
[ $? -eq 2 ] && grep -q -- '--device-memory "lots"' err || fail "bad size: $(cat err)"
"$cudafrag" advise --frobnicate fixed.cftrace >out 2>err
[ $? -eq 2 ] || fail "unknown option: $(cat err)"
"$cudafrag" advise missing.cftrace >out 2>err
[ $? -eq 1 ] || fail "missing file: $(cat err)"
"$cudafrag" advise --help | grep -q '^usage: cudafrag advise' || fail "--help"
exit 0
