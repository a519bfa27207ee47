#!/bin/sh
# readme_surface.sh SOURCE_ROOT BUILD_ROOT: what the README's two set-up commands
# show a new user besides the report and the test counts.
# - progress: a build prints "== DIR: N of M built" about every tenth of the way and
#   ends at M of M (a fresh build was silent for minutes); a failing one says so
#   with the end of its log and fails;
# - scripts/env.sh, sourced from the repository root by sh and by bash, puts the
#   built `cudafrag` and the demo workloads on PATH, so the README's examples run
#   as written; before anything is built it says what to run and leaves PATH alone.
set -u
src=$1 build=$2
. "$(dirname "$0")/../lib.sh"
need ninja
scratch

t_case=progress
proj=$dir/proj
mkdir -p "$proj"
{
    echo "rule touch"
    echo "  command = touch \$out"
    for i in $(seq 1 40); do echo "build t$i: touch"; done
} >"$proj/build.ninja"
# cf_ninja comes from the set-up script both README commands run; sourcing it
# installs nothing.
out=$(cd "$dir" && . "$src/scripts/setup.sh" && set +e && cf_ninja proj -j1) ||
    fail "cf_ninja failed: $out"
echo "$out" | grep -q "^== proj: 40 of 40 built$" || fail "no final progress line: $out"
lines=$(echo "$out" | grep -c "^== proj: [0-9]* of 40 built$")
[ "$lines" -ge 5 ] && [ "$lines" -le 10 ] || fail "$lines progress lines, want 5 to 10: $out"
echo "$out" | grep -vq "^== proj: " && fail "more than progress lines: $out"
[ -s "$dir/proj.build.log" ] || fail "no build log"
echo "build t99: touch missing_input" >>"$proj/build.ninja"
if out=$(cd "$dir" && . "$src/scripts/setup.sh" && set +e && cf_ninja proj -j1 2>&1); then
    fail "a failing build returned 0: $out"
fi
echo "$out" | grep -q "missing_input" || fail "the failure's log is not shown: $out"

t_case=env.sh
root=$dir/root
mkdir -p "$root/scripts"
cp "$src/scripts/env.sh" "$root/scripts/"
for shell in sh bash; do
    command -v "$shell" >/dev/null 2>&1 || continue
    out=$(cd "$root" && PATH=/usr/bin:/bin "$shell" -c '. scripts/env.sh; echo "PATH=$PATH"' 2>&1)
    echo "$out" | grep -q "not built yet: run ./scripts/demo.sh" ||
        fail "$shell, nothing built: no hint: $out"
    echo "$out" | grep -qx "PATH=/usr/bin:/bin" || fail "$shell, nothing built: PATH changed: $out"
done
ln -s "$build" "$root/build"
for shell in sh bash; do
    command -v "$shell" >/dev/null 2>&1 || continue
    out=$(cd "$root" && PATH=/usr/bin:/bin "$shell" -c '. scripts/env.sh >/dev/null;
        command -v cudafrag; command -v cudafrag-demo-video_pipeline' 2>&1)
    echo "$out" | grep -qx "$root/build/src/cli/cudafrag" || fail "$shell: cudafrag not on PATH: $out"
    echo "$out" | grep -qx "$root/build/tests/workloads/cudafrag-demo-video_pipeline" ||
        fail "$shell: the demo workloads not on PATH: $out"
done
echo "ok: progress lines and env.sh"
