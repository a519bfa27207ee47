#!/bin/sh
# Usage: run.sh LIBCUDAFRAG PROGRAM CHECKER MODE DEVICES SECOND [arena]
# Runs the program on DEVICES simulated devices, using device 0 and SECOND, with
# libcudafrag.so preloaded as rank 1 of a job (with "arena": allocations served
# by cudafrag's arena), then checks its JSON report. Exit 77 (skipped) without
# python3.
set -u
lib=$1 prog=$2 checker=$3 mode=$4 ndev=$5 second=$6 arena=${7:-}
t_case=$mode
arena_env="CUDAFRAG_ARENA=0"
[ "$arena" = arena ] && arena_env="CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1"
. "$(dirname "$0")/../lib.sh"
need python3
scratch

# RANK comes first; the launcher-specific variables must not win over it.
out=$(profiled $arena_env SIMCUDA_DEVICES="$ndev" SIMCUDA_MEM=1G RANK=1 OMPI_COMM_WORLD_RANK=3 \
    SLURM_PROCID=5 CUDAFRAG_OUTPUT="$dir/r-%r-%p" "$prog" "$mode" "$second")
rc=$?
[ $rc -eq 0 ] || fail "program exited with status $rc"
pid=$(printf '%s\n' "$out" | sed -n 's/^pid \([0-9][0-9]*\)$/\1/p')
[ -n "$pid" ] || fail "no pid in the program's output: $out"
python3 "$checker" "$dir" "$pid" 1 "$mode" "$second" $arena
