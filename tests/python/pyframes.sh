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
