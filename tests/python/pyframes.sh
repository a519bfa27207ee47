#!/bin/sh
# pyframes.sh CUDAFRAG LIBCUDAFRAG HELPER VERSION [MODE]: pyframes.py under cudafrag
# with the CPython VERSION (3.10 ... 3.13: python3.X on PATH or under pyenv;
# "system": /usr/bin/python3); its exit report and the report replayed from its
# trace name the Python call sites (check_pyframes.py). MODE "memory" (default):
# frames read from memory; "api": CUDAFRAG_PYTHON_MEMORY=0, the C API under the
# GIL. Skipped (77) when that interpreter is not installed.
set -u
cli=$1 lib=$2 helper=$3 version=$4 mode=${5:-memory}
memory=1
[ "$mode" = api ] && memory=0
here=$(dirname "$0")
. "$here/../lib.sh"

. "$here/find_python.sh"
py=$(find_python "$version")
[ -n "$py" ] || { echo "no Python $version here: skipped"; exit 77; }
"$py" -c 'import sys; print(sys.version)'
scratch
cp "$here/pyframes.py" "$dir/"
traced CUDAFRAG_PYTHON_MEMORY=$memory "$py" "$dir/pyframes.py" "$helper" || fail "pyframes.py failed"
replayed replay.txt
replayed replay.json --json
python3 "$here/check_pyframes.py" "$mode" "$dir/pyframes.py" "$dir/r.txt" "$dir/r.json" \
    "$dir/replay.txt" "$dir/replay.json" || { sed -n '/top call sites/,$p' "$dir/r.txt"; exit 1; }
# The flame-graph views name the same Python frames, with the interpreter's own
# native frames folded away as in the report: no frame by its raw id.
"$cli" export "$dir/r.cftrace" --format folded >"$dir/folded" 2>"$dir/folded.err" ||
    fail "export --format folded failed: $(cat "$dir/folded.err")"
"$cli" report "$dir/r.cftrace" --html "$dir/r.html" 2>"$dir/html.err" ||
    fail "report --html failed: $(cat "$dir/html.err")"
site_a=$(grep -n "# SITE_A$" "$dir/pyframes.py" | cut -d: -f1)
# Python frames fold as Python profilers write them: function (file:line).
grep -q "^<module> (pyframes.py:[0-9]*);main (pyframes.py:[0-9]*);alloc_a (pyframes.py:$site_a);cudaMalloc (pyframes.py:$site_a) " "$dir/folded" ||
    fail "the folded export does not name alloc_a's Python frames: $(cat "$dir/folded")"
# A stack with Python frames shows no eval loop; one whose frames are all the
# interpreter's (a call the interpreter made with no Python frame read) keeps the
# one the report shows it by, with its inlined callers.
! grep -q "0xffffff" "$dir/folded" && ! grep "(pyframes.py:" "$dir/folded" | grep -q "_PyEval_EvalFrame" ||
    fail "the folded export shows Python frames by id or the eval loop: $(cat "$dir/folded")"
grep -q "<title>alloc_a (pyframes.py:$site_a)$" "$dir/r.html" && ! grep -q "0xffffff" "$dir/r.html" ||
    fail "the HTML icicle does not name the Python frames"
