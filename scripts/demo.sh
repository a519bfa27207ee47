#!/bin/sh
# The main job: install what is missing, build, run the bundled demo workload
# (a video pipeline allocating per-frame buffers) under cudafrag and print the
# report. Uses the GPU when one is present, the simulated device otherwise.
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
cf_install_missing
cf_build build -Dwerror=true

demo=build/tests/workloads/cudafrag-demo-video_pipeline
sim="--sim"
# The demo links libcudart.so.13 by name; its build run path points at the
# simulated runtime, so on a GPU the real runtime must come first in the path.
cudart_dir=""
for d in "${CUDA_HOME:-}/lib64" "${CUDA_PATH:-}/lib64" /usr/local/cuda/lib64; do
    [ -e "$d/libcudart.so.13" ] && { cudart_dir=$d; break; }
done
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -n "$cudart_dir" ]; then
    sim=""
    export LD_LIBRARY_PATH="$cudart_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "== GPU found: $(nvidia-smi -L | head -n 1)"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "== GPU found, but no libcudart.so.13 (set CUDA_HOME): running on the simulated CUDA device"
else
    echo "== no GPU found: running on the simulated CUDA device"
fi
mkdir -p reports
rc=0
# shellcheck disable=SC2086
build/src/cli/cudafrag run $sim --output "reports/demo-%p" -- "$demo" "$@" || rc=$?
echo "== the reports are in reports/; for the README's examples, put cudafrag and the"
echo "== demo workloads on PATH in your shell:  . scripts/env.sh"
exit "$rc"
