#!/bin/sh
# layers.sh SRC_DIR: no #include goes from a lower layer of src/ to a higher one,
# nothing under src/ includes the simulated device (simcuda/): the profiler is
# built against CUDA's own headers and runs on a real driver, and no .c file is
# longer than 600 lines (split it along a seam, one job per file).
# Layers, bottom first: base, config, arena, record, report, hook, then the
# replay models and the command (replay, cli). A folder may use its own layer and
# any below it. One awk pass over every file: a loop of seds per file took 10 to
# 30 s on a loaded two-core machine.
#
# Then the files of src/record/ in ranks (below): a .c file may call, use or
# include what files of its own rank or below define, never a higher one. The
# headers record.h, event.h and internal.h declare for every rank.
set -u
src=${1:-$(dirname "$0")/../src}
status=0
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
}' || status=1

# Ranks of src/record/, bottom first; a file of no rank is an error (give it one).
# state: the data; the trace's files: the writer and its format; emit: the event
# sink; the tables from the threads' counters up to the events applied to them;
# sampling and regions over those; read: the report's copy; record: the one door.
ranks="lock state | trace* | emit | thread | metrics stack pyread | pyframes pyintern modules |
footprint | site pool | live | apply | sample region | read | record"
find "$src/record" -name '*.c' -print | sort | xargs awk -v ranks="$ranks" '
function rank_of(base,    r, i, n, names) {
    for (r = 1; r <= nranks; r++) {
        n = split(level[r], names, " ")
        for (i = 1; i <= n; i++)
            if (base == names[i] || (names[i] ~ /\*$/ && index(base, substr(names[i], 1, length(names[i]) - 1)) == 1))
                return r
    }
    return 0
}
BEGIN {
    nranks = split(ranks, level, "|")
    defined["cf_rec_init"] = "record" # inline in record.h: the init of the door
}
FNR == 1 {
    file = FILENAME; sub(/.*\//, "", file); sub(/\.c$/, "", file)
    files[file] = rank_of(file)
    if (!files[file]) { printf "src/record/%s.c has no rank in tests/layers.sh\n", file; bad++ }
    incomment = 0
}
{
    line = $0
    if (incomment) { if (!sub(/.*\*\//, "", line)) next; incomment = 0 }
    gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
    if (sub(/\/\*.*/, "", line)) incomment = 1
    sub(/\/\/.*/, "", line)
    gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
}
/^#include "record\/[a-z_]+\.h"/ {
    inc = $2; gsub(/"/, "", inc); sub(/^record\//, "", inc); sub(/\.h$/, "", inc)
    if (inc != "record" && inc != "internal" && inc != "event") includes[file, inc] = 1
    next
}
# A definition at the start of a line, not static: a function (the name before
# its parenthesis) or data (the last name before its size, value or semicolon).
line ~ /^[A-Za-z_]/ && line !~ /(^|[ \t])(static|extern|typedef)[ \t]/ {
    name = ""
    decl = line
    gsub(/(struct|enum|union)[ \t]+cf_[a-z0-9_]+/, "", decl)
    if (decl !~ /;[ \t]*$/ && match(decl, /cf_[a-z0-9_]+\(/)) name = substr(decl, RSTART, RLENGTH - 1)
    else if (match(decl, /cf_[a-z0-9_]+[ \t]*([[=;]|__attribute__)/)) name = substr(decl, RSTART, RLENGTH)
    sub(/[^a-z0-9_].*/, "", name)
    if (name != "") defined[name] = file
}
# Uses: every name but those of types.
{
    rest = line
    gsub(/(struct|enum|union)[ \t]+cf_[a-z0-9_]+/, "", rest)
    while (match(rest, /cf_[a-z0-9_]+/)) {
        used[file, substr(rest, RSTART, RLENGTH)] = 1
        rest = substr(rest, RSTART + RLENGTH)
    }
}
END {
    for (key in used) {
        split(key, k, SUBSEP)
        if (!(k[2] in defined)) continue
        to = defined[k[2]]
        if (to == k[1] || files[to] <= files[k[1]]) continue
        arrow[k[1], to] = arrow[k[1], to] (arrow[k[1], to] ? ", " : "") k[2]
    }
    for (key in includes) {
        split(key, k, SUBSEP)
        if ((k[2] in files) && files[k[2]] > files[k[1]]) arrow[k[1], k[2]] = arrow[k[1], k[2]] (arrow[k[1], k[2]] ? ", " : "") k[2] ".h"
    }
    for (key in arrow) {
        split(key, k, SUBSEP)
        printf "upward in src/record: %s.c (rank %d) uses %s.c (rank %d): %s\n", k[1], files[k[1]], k[2], files[k[2]], arrow[key]
        bad++
    }
    if (bad) exit 1
    print "layers: src/record/ calls no file above its own"
}' || status=1
exit $status
