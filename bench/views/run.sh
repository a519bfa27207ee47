#!/bin/sh
# Usage: run.sh CUDAFRAG LIBCUDAFRAG SIM_DIR GENERATOR
# The views on many call sites: GENERATOR (tests/views/many_sites.py) writes two
# traces of SITES call sites each (default 100 000; two ranks, other sizes),
# then check, diff, merge and report --html are timed beside the text report of
# one trace, in one run, as ratios. CPU time (user + system, the command and the
# children it waits for) is the figure that holds on a shared machine; wall
# time is shown too.
set -eu
[ $# -eq 4 ] || { echo "usage: $0 CUDAFRAG LIBCUDAFRAG SIM_DIR GENERATOR" >&2; exit 2; }
cli=$1 lib=$2 simdir=$3 gen=$4
sites=${SITES:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in "a 0 0" "b 1 1"; do
    set -- $run
    env LD_LIBRARY_PATH="$simdir" SIMCUDA_MEM=16G LD_PRELOAD="$lib" CUDAFRAG_TRACE=1 \
        CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT="$tmp/$1" RANK=$2 python3 "$gen" "$sites" "$3"
done
a=$tmp/a.cftrace b=$tmp/b.cftrace
timed() { # name command...: "name wall cpu" appended to $tmp/times
    name=$1
    shift
    /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null 2>&1 || echo "$name failed" >&2
    read -r wall user sys <"$tmp/t"
    echo "$name $wall $(echo "$user + $sys" | bc)" >>"$tmp/times"
}
timed "report (text)" "$cli" report "$a"
timed "check" "$cli" check "$a" --max-leak 1T
timed "diff" "$cli" diff "$a" "$b"
timed "merge" "$cli" merge "$a" "$b"
timed "report --html" "$cli" report --html "$tmp/a.html" "$a"
echo "| $sites call sites | wall (s) | CPU (s) | CPU / text report |"
echo "|---|---|---|---|"
awk '{ n = NF; cpu = $n; wall = $(n - 1); $n = ""; $(n - 1) = ""; sub(/ +$/, "")
       if (NR == 1) base = cpu
       printf "| %s | %.1f | %.2f | %.1f |\n", $0, wall, cpu, cpu / base }' "$tmp/times"
