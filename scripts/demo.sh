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
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    sim=""
    echo "== GPU found: $(nvidia-smi -L | head -n 1)"
else
    echo "== no GPU found: running on the simulated CUDA device"
fi
mkdir -p reports
# shellcheck disable=SC2086
build/src/cli/cudafrag run $sim --output "reports/demo-%p" -- "$demo" "$@"
