#!/bin/sh
# layers.sh SRC_DIR: no #include goes from a lower layer of src/ to a higher one,
# nothing under src/ includes the simulated device (simcuda/): the profiler is
# built against CUDA's own headers and runs on a real driver, and no .c file is
# longer than 600 lines (split it along a seam, one job per file).
# Layers, bottom first: base, config, arena, record, report, hook, then the
# replay models and the command (replay, cli). A folder may use its own layer and
# any below it. One awk pass over every file: a loop of seds per file took 10 to
# 30 s on a loaded two-core machine.
set -u
src=${1:-$(dirname "$0")/../src}
# simcuda's header names: a bare #include "sim.h" would reach it through an
# include path as surely as #include "simcuda/driver/sim.h".
simdir=$(dirname "$src")/simcuda
simnames=$(find "$simdir" -name '*.h' -exec basename {} \; 2>/dev/null | sort -u | tr '\n' ' ')
find "$src" \( -name '*.c' -o -name '*.h' \) -print | sort | xargs awk -v src="$src/" -v simnames="$simnames" -v max_lines=600 '
BEGIN {
    n = split("base config arena record report hook replay cli", names, " ")
    for (i = 1; i <= n; i++) rank[names[i]] = i
    m = split(simnames, sims, " ")
    for (i = 1; i <= m; i++) simh[sims[i]] = 1
}
function check_length(file, lines) {
    if (file ~ /\.c$/ && lines > max_lines) {
        printf "too long: %s has %d lines (at most %d)\n", file, lines, max_lines
        bad++
    }
}
FNR == 1 {
    if (rel != "") check_length(rel, last)
    rel = substr(FILENAME, length(src) + 1)
    own = rel; sub(/\/.*/, "", own)
}
/^[ \t]*#[ \t]*include[ \t]*[<"]/ {
    path = $0; sub(/^[^<"]*[<"]/, "", path); sub(/[>"].*/, "", path)
    if (path ~ /(^|\/)simcuda(\/|\.h$)/ || (path !~ /\// && (path in simh))) {
        printf "simulated device included: %s includes %s\n", rel, path
        bad++
    }
}
/^#include "[a-z_]+\// && (own in rank) {
    inc = $2; gsub(/"/, "", inc); sub(/\/.*/, "", inc)
    if ((inc in rank) && rank[inc] > rank[own] && !seen[rel, inc]++) {
        printf "upward include: %s includes %s/ (%s is above %s)\n", rel, inc, inc, own
        bad++
    }
}
{ last = FNR }
END {
    if (rel != "") check_length(rel, last)
    if (bad) exit 1
    print "layers: no upward include, no include of the simulated device, no .c file over " max_lines " lines"
}'
