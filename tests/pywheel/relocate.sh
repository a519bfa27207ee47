#!/bin/sh
# relocate.sh BUILDDIR: an install moved away from its configured prefix (as a
# wheel's is) still runs: the command finds libcudafrag.so and the simulated device
# relative to its own executable, not at the compiled-in paths.
set -u
build=$1
here=$(dirname "$0")
. "$here/../lib.sh"
need python3
scratch
on_fail() { cat "$dir/err.txt" 2>/dev/null; }
meson install -C "$build" --no-rebuild --quiet --destdir "$dir/staged" >"$dir/install.txt" 2>&1 ||
    { cat "$dir/install.txt" >&2; fail "meson install failed"; }
mv "$dir/staged" "$dir/moved"
exe=$(find "$dir/moved" -type f -name cudafrag -perm -u+x | head -1)
[ -n "$exe" ] || fail "no cudafrag command installed"
# Nothing of the build tree on the way: the simulated device must come from the install.
unset LD_LIBRARY_PATH
"$exe" run --sim --output "$dir/r" -- python3 -c '
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(3 << 20)) == 0
' 2>"$dir/err.txt" || fail "the moved command failed"
python3 - "$dir/r.json" <<'PY' || fail "the report does not have the program's allocation"
import json, sys
apis = {a["name"]: a for a in json.load(open(sys.argv[1]))["apis"]}
assert apis["cudaMalloc"]["calls"] == 1 and apis["cudaMalloc"]["bytes"] == 3 << 20, apis
PY
"$exe" run --sim -- sh -c 'echo "$LD_PRELOAD"' >"$dir/preload.txt" 2>>"$dir/err.txt"
grep -q "^$dir/moved/.*/libcudafrag\.so[.0-9]*\$" "$dir/preload.txt" ||
    fail "the preloaded library is not the moved install's: $(cat "$dir/preload.txt")"
echo "ok: a moved install finds its library and simulated device"
