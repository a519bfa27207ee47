#!/bin/sh
# Usage: outputs.sh LIBCUDAFRAG APP QUIET_APP CASE
# Reports that cannot be written: a clear message saying what was lost, the
# program's output and exit status unchanged, nothing clobbered. APP prints a
# line on stdout and one on stderr and exits with 3; QUIET_APP (exit_paths in
# mode "exit") prints nothing and exits with 3.
set -u
lib=$1 app=$2 quiet=$3 case=$4
t_case=$case
. "$(dirname "$0")/../lib.sh"
scratch
mnt=
cleanup() {
    [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
on_fail() { [ -f "$dir/err" ] && cat "$dir/err"; }
export CUDAFRAG_STDERR=0 LD_PRELOAD="$lib"

# run PATTERN: runs APP with that output pattern; checks its status and output.
run() {
    CUDAFRAG_OUTPUT="$1" "$app" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 3 ] || fail "status $rc, want 3"
    [ "$(cat "$dir/out")" = "app output 42" ] || fail "stdout changed"
    grep -qx "app stderr line" "$dir/err" || fail "the program's stderr line is gone"
}
# lost WHAT MESSAGE: the stderr note for one file.
lost() { grep -q "^cudafrag: $2; the $1 report lost\$" "$dir/err" || fail "no note: $2 ($1)"; }

case $case in
missing-dir)
    run "$dir/none/r"
    lost text "cannot create $dir/none/r.txt: the directory does not exist"
    lost JSON "cannot create $dir/none/r.json: the directory does not exist";;
file-as-dir)
    # Root ignores permissions: a regular file in the path fails for everyone.
    : >"$dir/plain"
    run "$dir/plain/r"
    lost text "cannot create $dir/plain/r.txt: Not a directory"
    lost JSON "cannot create $dir/plain/r.json: Not a directory";;
proc)
    run "/proc/self/cudafrag-r"
    [ "$(grep -c '^cudafrag: cannot create /proc/self/cudafrag-r\.\(txt\|json\): .*; the \(text\|JSON\) report lost$' "$dir/err")" -eq 2 ] ||
        fail "want one note per file"
    # /proc/self exists; procfs refuses the new file with ENOENT.
    grep -q "directory does not exist" "$dir/err" && fail "the note blames a directory that exists"
    :;;
too-long)
    long=$dir/$(printf '%05000d' 0)
    run "$long"
    [ "$(grep -c '^cudafrag: CUDAFRAG_OUTPUT=".*\.\.\." expands to a path longer than 4095 bytes; report file not written; the \(text\|JSON\) report lost$' "$dir/err")" -eq 2 ] ||
        fail "want one note per file";;
symlink)
    # A shared, sticky directory: someone else's link at our report path.
    shared=$(mktemp -d /tmp/cudafrag-shared.XXXXXX) || exit 1
    chmod 1777 "$shared"
    echo "precious" >"$dir/victim"
    ln -s "$dir/victim" "$shared/r.txt"
    run "$shared/r"
    res=$(cat "$dir/victim")
    json=0
    [ -s "$shared/r.json" ] && [ ! -L "$shared/r.json" ] && json=1
    rm -rf "$shared"
    [ "$res" = precious ] || fail "the link's target was overwritten"
    lost text "refusing to write $shared/r.txt: it is a symbolic link"
    [ $json -eq 1 ] || fail "the JSON report, which had no link in its way, is missing";;
enospc)
    [ "$(id -u)" -eq 0 ] || { echo "not root: no tmpfs to fill" >&2; exit 77; }
    mkdir "$dir/small" && mount -t tmpfs -o size=4k tmpfs "$dir/small" 2>/dev/null ||
        { echo "cannot mount a small tmpfs" >&2; exit 77; }
    mnt=$dir/small
    run "$dir/small/r"
    grep -q "^cudafrag: writing $dir/small/r\.\(txt\|json\) failed (No space left on device); the \(text\|JSON\) report is incomplete$" \
        "$dir/err" || fail "no note about the full disk";;
fsize)
    # A file size limit: the write must fail with EFBIG, not kill the program
    # with SIGXFSZ (whose default action ends it).
    (ulimit -f 2 && CUDAFRAG_OUTPUT="$dir/r" "$app" >"$dir/out" 2>"$dir/err"); rc=$?
    [ $rc -eq 3 ] || fail "status $rc, want 3 (153 is SIGXFSZ)"
    grep -q "^cudafrag: writing $dir/r\.\(txt\|json\) failed (File too large)" "$dir/err" ||
        fail "no note about the size limit";;
broken-pipe)
    # stderr is a pipe whose reader has gone: the report cannot be printed,
    # which must not kill a program that never writes there with SIGPIPE.
    mkfifo "$dir/fifo" || exit 1
    exec 4<>"$dir/fifo" 5>"$dir/fifo" 4<&-
    CUDAFRAG_STDERR=1 CUDAFRAG_OUTPUT= "$quiet" exit 2>&5; rc=$?
    exec 5>&-
    [ $rc -eq 3 ] || fail "status $rc, want 3 (141 is SIGPIPE)";;
stderr-closed)
    CUDAFRAG_STDERR=1 CUDAFRAG_OUTPUT= "$quiet" exit 2>&-; rc=$?
    [ $rc -eq 3 ] || fail "status $rc, want 3";;
*) fail "unknown case";;
esac
exit 0
