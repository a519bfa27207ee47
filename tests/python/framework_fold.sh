#!/bin/sh
# framework_fold.sh CUDAFRAG LIBCUDAFRAG: allocations a program makes through a
# framework's own Python package (a stand-in "torch" under a site-packages folder)
# are shown at the program's line that called into it, without CUDAFRAG_SKIP_FRAMES;
# the JSON keeps the package's frames, marked folded, and `cudafrag report` of the
# trace shows the same site.
set -u
cli=$1 lib=$2
here=$(dirname "$0")
. "$here/../lib.sh"
need python3
scratch
on_fail() { sed -n '/top call sites by peak/,/^$/p' "$dir/r.txt"; }
mkdir -p "$dir/site-packages/torch"
cat >"$dir/site-packages/torch/__init__.py" <<'PY'
import ctypes

_rt = ctypes.CDLL("libcudart.so.13")


def empty(n):
    p = ctypes.c_void_p()
    if _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise SystemExit("cudaMalloc failed")
    return p
PY
cat >"$dir/train.py" <<'PY'
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402


def step():
    return torch.empty(1 << 20)  # USER_LINE


keep = [step() for _ in range(3)]
PY
line=$(grep -n USER_LINE "$dir/train.py" | cut -d: -f1)
traced python3 "$dir/train.py" "$dir/site-packages" || fail "train.py failed"
replayed replay.txt
for r in r.txt replay.txt; do
    grep -qE "^    at step \(python\) train\.py:$line\$" "$dir/$r" ||
        fail "$r: the site is not shown at train.py:$line"
done
python3 - "$dir/r.json" "$line" <<'PY' || fail "JSON: the package's frames are not kept, marked folded"
import json, sys
report, line = json.load(open(sys.argv[1])), int(sys.argv[2])
sites = [e["site"] for e in report["top_sites_by_peak"]
         if e["site"]["label"].endswith("train.py:%d" % line)]
assert sites, [e["site"]["label"] for e in report["top_sites_by_peak"]]
frames = sites[0]["frames"]
pkg = [f for f in frames if f["python"] and "site-packages/torch/" in (f.get("file") or "")]
assert pkg and all(f["folded"] for f in pkg), frames
user = [f for f in frames if f["python"] and (f.get("file") or "").endswith("train.py")]
assert user and not any(f["folded"] for f in user), frames
PY
echo "ok: shown at train.py:$line, the package's frames kept and folded"
