#!/bin/sh
# layers_check.sh LAYERS_SH: layers.sh fails, naming the file, on each kind of
# fault in a made-up tree -- an upward include, an include of the simulated
# device (by its path or a bare header name), a .c file over 600 lines -- and
# passes the same tree without them.
set -u
layers=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src/base" "$dir/src/cli" "$dir/simcuda/driver"
: >"$dir/simcuda/driver/sim.h"
printf '#include "base/b.h"\n' >"$dir/src/cli/ok.c"
printf '#include <string.h>\n' >"$dir/src/base/b.c"
seq 599 | sed 's/.*/;/' >>"$dir/src/base/b.c"

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect FILE LINE MESSAGE: with LINE added to FILE, layers.sh fails saying MESSAGE.
expect() {
    cp "$dir/src/$1" "$dir/keep"
    printf '%s\n' "$2" >>"$dir/src/$1"
    out=$(sh "$layers" "$dir/src" 2>&1) && fail "passed with '$2' in $1"
    case $out in *"$3"*) ;; *) fail "for '$2' in $1: expected '$3' in: $out" ;; esac
    mv "$dir/keep" "$dir/src/$1"
}

sh "$layers" "$dir/src" >/dev/null || fail "the clean tree does not pass"
expect base/b.c '#include "cli/x.h"' "upward include: base/b.c includes cli/"
expect cli/ok.c '#include "simcuda/driver/sim.h"' "simulated device included: cli/ok.c"
expect cli/ok.c '#include "sim.h"' "simulated device included: cli/ok.c includes sim.h"
expect cli/ok.c '#include <simcuda.h>' "simulated device included: cli/ok.c includes simcuda.h"
expect base/b.c ';' "too long: base/b.c has 601 lines (at most 600)"
echo "layers.sh catches each fault"
