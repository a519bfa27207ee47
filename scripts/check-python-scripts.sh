#!/usr/bin/env bash
# Every Python script under scripts/ compiles and answers --help: the GPU harnesses
# call them on machines where a syntax error would cost a whole GPU run.
set -u
root=${1:?usage: check-python-scripts.sh ROOT}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export PYTHONPYCACHEPREFIX=$cache
# The interpreter itself, not a version manager's shim: each start counts here.
py=$(python3 -c 'import sys; print(sys.executable)')
fail=0 n=0
for f in "$root"/scripts/*.py; do
    n=$((n + 1))
    name=${f#"$root"/}
    if ! "$py" -m py_compile "$f"; then
        echo "FAIL: $name does not compile"
        fail=1
        continue
    fi
    if ! "$py" "$f" --help >"$cache/help" 2>&1 || ! grep -q '^usage:' "$cache/help"; then
        echo "FAIL: $name --help gives no usage:"
        sed 's/^/    /' "$cache/help"
        fail=1
    fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no scripts/*.py under $root"; exit 1; }
[ "$fail" = 0 ] && echo "ok: $n scripts compile and answer --help"
exit "$fail"
