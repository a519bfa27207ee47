#!/bin/sh
# layers.sh SRC_DIR: no #include goes from a lower layer of src/ to a higher one.
# Layers, bottom first: base, config, arena, record, report, hook, then the
# replay models and the command (replay, cli). A folder may use its own layer and
# any below it. One awk pass over every file: a loop of seds per file took 10 to
# 30 s on a loaded two-core machine.
set -u
src=${1:-$(dirname "$0")/../src}
find "$src" \( -name '*.c' -o -name '*.h' \) -print | sort | xargs awk -v src="$src/" '
BEGIN {
    n = split("base config arena record report hook replay cli", names, " ")
    for (i = 1; i <= n; i++) rank[names[i]] = i
}
FNR == 1 {
    rel = substr(FILENAME, length(src) + 1)
    own = rel; sub(/\/.*/, "", own)
}
/^#include "[a-z_]+\// && (own in rank) {
    inc = $2; gsub(/"/, "", inc); sub(/\/.*/, "", inc)
    if ((inc in rank) && rank[inc] > rank[own] && !seen[rel, inc]++) {
        printf "upward include: %s includes %s/ (%s is above %s)\n", rel, inc, inc, own
        bad++
    }
}
END {
    if (bad) exit 1
    print "layers: no upward include"
}'
