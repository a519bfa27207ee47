# Source this from the repository root after ./scripts/demo.sh or ./scripts/test.sh
# built ./build:   . scripts/env.sh
# It puts the built `cudafrag` command and the bundled demo workloads
# (cudafrag-demo-*) on PATH, so that the README's examples run as written.
cf_root=$(cd "$(dirname "${BASH_SOURCE:-$0}")/.." 2>/dev/null && pwd)
[ -x "$cf_root/build/src/cli/cudafrag" ] || cf_root=$(pwd)
if [ -x "$cf_root/build/src/cli/cudafrag" ]; then
    PATH="$cf_root/build/src/cli:$cf_root/build/tests/workloads:$PATH"
    export PATH
    echo "cudafrag: $(command -v cudafrag)"
else
    echo "cudafrag is not built yet: run ./scripts/demo.sh first (from the repository root)" >&2
fi
unset cf_root
