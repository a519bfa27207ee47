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
    CUDAFRAG_OUTPUT="$1" timeout -k 5 20 "$app" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "hung (killed by timeout)"
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
    grep -q "^cudafrag: writing $dir/small/r\.\(txt\|json\) failed (No space left on device); the \(text\|JSON\) report lost$" \
        "$dir/err" || fail "no note about the full disk"
    # Nothing half-written is left behind: no empty or cut-short report, no
    # temporary file.
    left=$(ls -A "$dir/small")
    for f in $left; do
        grep -q "^==== end of cudafrag report ====$" "$dir/small/$f" 2>/dev/null ||
            { [ "${f%.json}" != "$f" ] && jq -e . "$dir/small/$f" >/dev/null 2>&1; } ||
            fail "left behind: $f ($(wc -c <"$dir/small/$f") bytes)"
    done;;
fifo)
    # A FIFO at the report path: nobody reads it, so opening it for writing
    # would wait forever (and the program's buffered stdout would be lost).
    mkfifo "$dir/r.txt" || exit 1
    run "$dir/r"
    lost text "refusing to write $dir/r.txt: it is a FIFO, not a regular file"
    [ -p "$dir/r.txt" ] || fail "the FIFO was replaced"
    [ -s "$dir/r.json" ] || fail "the JSON report, which had no FIFO in its way, is missing";;
hardlink)
    # A hard link to someone's file at the report path: writing it would
    # overwrite that file.
    echo "precious" >"$dir/victim"
    ln "$dir/victim" "$dir/r.txt" || exit 1
    run "$dir/r"
    [ "$(cat "$dir/victim")" = precious ] || fail "the linked file was overwritten"
    lost text "refusing to write $dir/r.txt: it has 1 other hard link"
    [ -s "$dir/r.json" ] || fail "the JSON report, which had no link in its way, is missing";;
replace)
    # An old report at the path is replaced by the new one, whole.
    printf 'old report, longer than nothing\n' >"$dir/r.txt"
    run "$dir/r"
    grep -q "^==== end of cudafrag report ====$" "$dir/r.txt" || fail "the new report is not there"
    grep -q "old report" "$dir/r.txt" && fail "the old report is still there"
    [ "$(ls -A "$dir" | grep -vc '^\(r\.txt\|r\.json\|out\|err\)$')" -eq 0 ] ||
        fail "files left behind: $(ls -A "$dir")";;
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
long-exe)
    # A 250-byte executable name under the default pattern (cudafrag-%e-%p, in
    # the current directory): every file still fits NAME_MAX, its name starts
    # with the executable's and ends in a hash of it.
    name=$(printf 'x%.0s' $(seq 250))
    ln -s "$(readlink -f "$app")" "$dir/$name" || exit 1
    abs_lib=$(readlink -f "$lib")
    (cd "$dir" && env -u CUDAFRAG_OUTPUT CUDAFRAG_TRACE=1 LD_PRELOAD="$abs_lib" "./$name" >out 2>err)
    rc=$?
    [ $rc -eq 3 ] || fail "status $rc, want 3"
    [ "$(grep -c '^cudafrag:' "$dir/err")" -eq 0 ] || fail "messages: $(cat "$dir/err")"
    short="cudafrag-$(printf 'x%.0s' $(seq 55))~[0-9a-f]\{8\}-[0-9]*"
    for ext in txt json cftrace; do
        [ "$(ls "$dir" | grep -c "^$short\.$ext\$")" -eq 1 ] || fail "no .$ext file: $(ls "$dir")"
    done;;
pattern-2k | pattern-3k | pattern-4k)
    # A pattern of 2000, 3000 or 4000 bytes whose directory is missing: one
    # whole line per report, the path shortened with "...".
    size=${case#pattern-}; size=${size%k}
    comp=$(printf 'd%.0s' $(seq 200))
    long=$dir/none
    while [ ${#long} -lt $((size * 1000 - 220)) ]; do long=$long/$comp; done
    long=$long/$(printf 'r%.0s' $(seq $((size * 1000 - ${#long} - 1))))
    [ ${#long} -eq $((size * 1000)) ] || fail "pattern of ${#long} bytes"
    run "$long"
    n=$(grep -c '^cudafrag: .*\.\.\..*; the \(text\|JSON\) report lost$' "$dir/err")
    [ "$n" -eq 2 ] || fail "$n whole lines about the reports, want 2: $(cat "$dir/err")"
    [ "$(grep -c 'cudafrag' "$dir/err")" -eq 2 ] || fail "other messages: $(cat "$dir/err")"
    [ "$(awk 'length > 400' "$dir/err" | wc -l)" -eq 0 ] || fail "a message line is not short"
    # Under directories that exist, both reports and the trace are written.
    ok=${long%/*}
    ok=$dir/some${ok#"$dir"/none}
    mkdir -p "$ok" || exit 1
    CUDAFRAG_TRACE=1 run "$ok/r"
    grep -q '^cudafrag' "$dir/err" && fail "messages: $(cat "$dir/err")"
    for ext in txt json cftrace; do
        [ -s "$ok/r.$ext" ] || fail "no $ok/r.$ext"
    done;;
*) fail "unknown case";;
esac
exit 0
