# Shared by the shell tests, sourced first thing after their arguments are read:
#     . "$(dirname "$0")/../lib.sh"
# A scratch directory, one way to fail or skip, and one way to run a program under
# cudafrag and read back what it wrote. Nothing here asserts anything on its own:
# each test says what must hold.

# scratch: $dir, an empty directory removed when the test exits.
scratch() {
    dir=$(mktemp -d) || exit 1
    trap 'rm -rf "$dir"' EXIT
}

# What a test prints when it fails, besides the message: redefine it after
# sourcing (a listing of $dir, the program's stderr, ...). Its output goes to stderr.
on_fail() {
    :
}

# fail MESSAGE: "FAIL (CASE): MESSAGE" on stderr ("FAIL: MESSAGE" while $t_case is
# empty), then what on_fail prints; exit status 1.
fail() {
    echo "FAIL${t_case:+ ($t_case)}: $*" >&2
    on_fail >&2
    exit 1
}

# need COMMAND: skip the test (exit status 77) where COMMAND is not installed.
need() {
    command -v "$1" >/dev/null 2>&1 || { echo "$1 not found: skipped" >&2; exit 77; }
}

# profiled [VAR=VALUE...] PROG [ARG...]: runs PROG with libcudafrag.so ($lib)
# preloaded and nothing of cudafrag's on stderr; the reports go to $dir/r.txt and
# $dir/r.json, the trace (with CUDAFRAG_TRACE=1) to $dir/r.cftrace. VAR=VALUE
# arguments win over these settings. Returns PROG's exit status.
profiled() {
    env LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 "$@"
}

# traced [VAR=VALUE...] PROG [ARG...]: profiled, with the trace written.
traced() {
    profiled CUDAFRAG_TRACE=1 "$@"
}

# replayed OUT [OPTION...]: `cudafrag report [OPTION...] $dir/r.cftrace` ($cli)
# into $dir/OUT; a failure of the command fails the test, with its stderr.
replayed() {
    out=$1
    shift
    "$cli" report "$@" "$dir/r.cftrace" >"$dir/$out" 2>"$dir/$out.err" ||
        fail "cudafrag report $* failed: $(cat "$dir/$out.err")"
}
