#!/bin/sh
# Usage: run.sh LIBCUDAFRAG PROGRAM CHECKER MODE DEVICES SECOND [arena]
# Runs the program on DEVICES simulated devices, using device 0 and SECOND, with
# libcudafrag.so preloaded as rank 1 of a job (with "arena": allocations served
# by cudafrag's arena), then checks its JSON report. Exit 77 (skipped) without
# python3.
set -u
lib=$1 prog=$2 checker=$3 mode=$4 ndev=$5 second=$6 arena=${7:-}
arena_env="CUDAFRAG_ARENA=0"
[ "$arena" = arena ] && arena_env="CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1"
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found: the report cannot be checked" >&2
    exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

# RANK comes first; the launcher-specific variables must not win over it.
out=$(env $arena_env LD_PRELOAD="$lib" SIMCUDA_DEVICES="$ndev" SIMCUDA_MEM=1G RANK=1 OMPI_COMM_WORLD_RANK=3 \
    SLURM_PROCID=5 CUDAFRAG_OUTPUT="$dir/r-%r-%p" CUDAFRAG_STDERR=0 \
    "$prog" "$mode" "$second")
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL ($mode): program exited with status $rc" >&2
    exit 1
fi
pid=$(printf '%s\n' "$out" | sed -n 's/^pid \([0-9][0-9]*\)$/\1/p')
if [ -z "$pid" ]; then
    echo "FAIL ($mode): no pid in the program's output: $out" >&2
    exit 1
fi
python3 "$checker" "$dir" "$pid" 1 "$mode" "$second" $arena
