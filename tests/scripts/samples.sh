#!/bin/sh
# The GPU harnesses' Python on saved runs: each script's output on a sample
# folder (reports and logs of simulated-device runs, plus hand-made framework
# runs: a timeout, a bad report, NCCL call sites) must equal the saved table.
# The tables were made by the harnesses' code as it stood inside the shell
# scripts, so a difference is a change of behaviour.
set -u
root=${1:?usage: samples.sh ROOT}
s="$root/tests/scripts/samples"
py="$root/scripts"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PYTHONPYCACHEPREFIX="$out/cache"
# The interpreter itself, not a version manager's shim: each start counts here.
python3=$(python3 -c 'import sys; print(sys.executable)')
fail=0

# same NAME EXPECTED COMMAND...: the command's standard output equals EXPECTED.
same() {
    name=$1 want=$2
    shift 2
    if ! "$@" >"$out/$name" 2>"$out/$name.err"; then
        echo "FAIL: $name exits $? ($(head -c 300 "$out/$name.err"))"
        fail=1
    elif ! diff -u "$want" "$out/$name"; then
        echo "FAIL: $name differs from $want"
        fail=1
    else
        echo "ok: $name"
    fi
}

c="$s/gpu-check"
same gpu-check-table "$c/table.txt" \
    "$python3" "$py/gpu_check_table.py" "$c/rows.tsv" "$c/logs" "$c/reports" "$c/workloads.meson"
m="$s/gpu-check-multi"
same gpu-check-multi-table "$m/table.txt" \
    "$python3" "$py/gpu_check_multi_table.py" "$m/rows.tsv" "$m/logs" "$m/reports"
same nccl-sites-ddp "$m/nccl-ddp.txt" "$python3" "$py/nccl_sites.py" "$m/reports" ddp.caching+cf
same nccl-sites-bad-report "$m/nccl-bad-report.txt" \
    "$python3" "$py/nccl_sites.py" "$m/reports" ddp.no-cache+cf
same nccl-sites-sim "$m/nccl-sim.txt" \
    "$python3" "$py/nccl_sites.py" "$m/reports" multi_gpu_sim-ranks.cudafrag
b="$s/gpu-blocks"
same replay-vs-real "$b/replay.txt" "$python3" "$py/replay_vs_real.py" "$b"
a="$s/gpu-arena"
same arena-table "$a/table.txt" "$python3" "$py/arena_table.py" "$a/rows.tsv" "$a/logs" "$a/reports"

# json_field.py: a number, a nested field, a list index, a null on the way, the
# default of a missing field; a missing field without default fails.
r="$c/reports/video_pipeline.arena-4242.json"
{
    "$python3" "$py/json_field.py" "$r" summary.allocs
    "$python3" "$py/json_field.py" "$r" arena_vs_native.arena.allocs_served
    "$python3" "$py/json_field.py" "$r" devices.0.meminfo_cross_check.samples
    "$python3" "$py/json_field.py" "$r" arena_vs_native.arena.active
    "$python3" "$py/json_field.py" "$b/torch-blocks-replay.json" devices.0.models.1.label
    "$python3" "$py/json_field.py" --default '' "$r" devices.0.recommended.conf
    "$python3" "$py/json_field.py" "$c/reports/torch.caching+cf-7.json" arena_vs_native.arena.active
} >"$out/json-field" 2>"$out/json-field.err" || { echo "FAIL: json_field.py exits $?"; fail=1; }
printf '12001\n12000\n2\nTrue\npytorch:expandable_segments=True\n\nFalse\n' >"$out/json-field.want"
diff -u "$out/json-field.want" "$out/json-field" || { echo "FAIL: json_field.py"; fail=1; }
if "$python3" "$py/json_field.py" "$r" summary.no_such_field >"$out/missing" 2>/dev/null ||
    [ "$(cat "$out/missing")" != "" ]; then
    echo "FAIL: json_field.py: a missing field gives no error, or prints something"
    fail=1
fi
exit "$fail"
