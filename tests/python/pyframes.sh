#!/bin/sh
# pyframes.sh CUDAFRAG LIBCUDAFRAG HELPER VERSION: pyframes.py under cudafrag with
# the CPython VERSION (3.10 ... 3.13: python3.X on PATH or under pyenv; "system":
# /usr/bin/python3, which links libpython statically); its exit report and the
# report replayed from its trace name the Python call sites (check_pyframes.py).
# Skipped (77) when that interpreter is not installed.
set -u
cli=$1 lib=$2 helper=$3 version=$4
here=$(dirname "$0")
. "$here/../lib.sh"

find_python() {
    if [ "$1" = system ]; then
        [ -x /usr/bin/python3 ] && echo /usr/bin/python3
        return
    fi
    for c in "python$1" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
        p=$(command -v "$c" 2>/dev/null) || continue
        "$p" -c "import ctypes, sys; sys.exit(sys.version[:len('$1')] != '$1')" 2>/dev/null &&
            { echo "$p"; return; }
    done
}

py=$(find_python "$version")
[ -n "$py" ] || { echo "no Python $version here: skipped"; exit 77; }
"$py" -c 'import sys; print(sys.version)'
scratch
cp "$here/pyframes.py" "$dir/"
traced "$py" "$dir/pyframes.py" "$helper" || fail "pyframes.py failed"
replayed replay.txt
replayed replay.json --json
python3 "$here/check_pyframes.py" "$dir/pyframes.py" "$dir/r.txt" "$dir/r.json" \
    "$dir/replay.txt" "$dir/replay.json" || { sed -n '/top call sites/,$p' "$dir/r.txt"; exit 1; }
