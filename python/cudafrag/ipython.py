"""IPython/Jupyter magic: `%load_ext cudafrag.ipython`, then a cell starting with

    %%cudafrag [--sim] [--height PIXELS]

runs the cell's code under cudafrag and shows the HTML report inline. In a
kernel that cudafrag does not profile (the usual case) the cell runs in a fresh
Python subprocess under `cudafrag run --trace`: it sees none of the notebook's
variables, so it imports and builds what it needs. In a kernel started under
cudafrag (`cudafrag run -- jupyter ...`) the cell runs in the kernel itself,
inside a region, and its peaks are shown."""
import argparse
import html
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from . import _api
from ._sizes import format_size


def _parser():
    p = argparse.ArgumentParser(prog="%%cudafrag", add_help=False)
    p.add_argument("--sim", action="store_true", help="on cudafrag's simulated device")
    p.add_argument("--height", type=int, default=720, help="height of the report's frame")
    return p


def profile_code(code, sim=False):
    """Runs code in a Python subprocess under cudafrag; returns (HTML report or
    None, the text report, the program's output). Raises RuntimeError with the
    command's message when cudafrag could not run it."""
    from . import command

    exe = command()
    with tempfile.TemporaryDirectory(prefix="cudafrag-cell-") as d:
        script, out = Path(d) / "cell.py", Path(d) / "report"
        script.write_text(code)
        run = [exe, "run", "--trace", "--output", str(out)] + (["--sim"] if sim else [])
        proc = subprocess.run(run + ["--", sys.executable, str(script)],
                              capture_output=True, text=True, check=False)
        text = out.with_suffix(".txt").read_text() if out.with_suffix(".txt").exists() else ""
        trace = out.with_suffix(".cftrace")
        if not trace.exists():
            raise RuntimeError(f"cudafrag wrote no trace (exit status {proc.returncode}):\n"
                               f"{proc.stderr.strip()}")
        page = Path(d) / "report.html"
        made = subprocess.run([exe, "report", "--html", str(page), str(trace)],
                              capture_output=True, text=True, check=False)
        report_html = page.read_text() if made.returncode == 0 and page.exists() else None
        return report_html, text, proc.stdout + proc.stderr


def framed(page, height=720):
    """The report page in an iframe: its styles stay its own inside a notebook."""
    return (f'<iframe srcdoc="{html.escape(page, quote=True)}" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #ccc"></iframe>')


def peaks_table(name, live, footprint):
    frag = f"{100 * (1 - live / footprint):.1f}%" if footprint else "-"
    return ("<table><tr><th>region</th><th>peak live</th><th>peak footprint</th>"
            "<th>1 - live/footprint</th></tr>"
            f"<tr><td>{html.escape(name)}</td><td>{format_size(live)}</td>"
            f"<td>{format_size(footprint)}</td><td>{frag}</td></tr></table>")


def _cudafrag_magic(shell, line, cell):
    from IPython.display import HTML, display

    args = _parser().parse_args(shlex.split(line))
    if _api.available():  # this kernel is profiled: the cell runs here
        r = _api.region(f"cell {getattr(shell, 'execution_count', 0)}")
        with r:
            shell.run_cell(cell)
        display(HTML(peaks_table(r.name, r.peak_live or 0, r.peak_footprint or 0)))
        return
    page, text, output = profile_code(cell, sim=args.sim)
    if output:
        print(output, end="")
    if page is None:
        print(text)
        return
    display(HTML(framed(page, args.height)))


def load_ipython_extension(ipython):
    """`%load_ext cudafrag.ipython` registers the cell magic %%cudafrag."""

    def cudafrag(line, cell):
        return _cudafrag_magic(ipython, line, cell)

    ipython.register_magic_function(cudafrag, magic_kind="cell", magic_name="cudafrag")
