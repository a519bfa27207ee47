#!/bin/sh
# Usage: options.sh CUDAFRAG CASE PROG TWO_DEVICES
# The subcommands as a hostile user drives them: every option in both of its
# forms, errors that say one thing and point to --help, an output that is an
# input refused before anything is written, inputs that are pipes.
set -u
cudafrag=$1 case=$2 prog=$3 two=$4
t_case=$case
. "$(dirname "$0")/../lib.sh"
scratch
export CUDAFRAG_STDERR=0
on_fail() {
    cat "$dir/err" 2>/dev/null
}

# trace NAME PROG [VAR=VALUE...]: $dir/NAME.cftrace and $dir/NAME.json from PROG on
# the simulated device.
trace() {
    name=$1 p=$2
    shift 2
    env "$@" "$cudafrag" run --sim --trace --output "$dir/$name" -- "$p" ||
        fail "$p under cudafrag run: status $?"
    [ -s "$dir/$name.cftrace" ] && [ -s "$dir/$name.json" ] || fail "no trace or report of $p"
}

# usage_error ARGS...: cudafrag ARGS must exit 2 after one line saying what is
# wrong and one pointing to the subcommand's --help, with nothing on stdout.
usage_error() {
    "$cudafrag" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "cudafrag $*: status $rc, want 2"
    [ ! -s "$dir/out" ] || fail "cudafrag $*: wrote to stdout: $(cat "$dir/out")"
    [ "$(wc -l <"$dir/err")" -eq 2 ] || fail "cudafrag $*: want 2 lines on stderr"
    sed -n 2p "$dir/err" | grep -q "^usage: cudafrag .*(more: cudafrag $1 --help)$" ||
        fail "cudafrag $*: no pointer to cudafrag $1 --help"
}

# ok ARGS...: cudafrag ARGS must succeed.
ok() {
    "$cudafrag" "$@" >"$dir/out" 2>"$dir/err" || fail "cudafrag $*: status $?"
}

case $case in
opt-forms)
    # --opt=value and -oFILE wherever an option takes a value (D15).
    trace a "$prog"
    trace b "$prog"
    ok export --format=folded "$dir/a.cftrace"
    ok export --format folded --output="$dir/f1" "$dir/a.cftrace"
    ok export "-o$dir/f2" --format=folded --weight=calls --device=0 "$dir/a.cftrace"
    [ -s "$dir/f1" ] && [ -s "$dir/f2" ] || fail "export: --output= or -oFILE wrote nothing"
    ok diff --top=2 "$dir/a.json" "$dir/b.json"
    ok diff --top 2 --json "$dir/a.json" "$dir/b.cftrace"
    ok merge "-o$dir/m1" "$dir/a.json" "$dir/b.json"
    ok merge --output="$dir/m2" --json "$dir/a.json"
    ok merge --output "$dir/m3" "$dir/a.json"
    [ -s "$dir/m1" ] && [ -s "$dir/m2" ] && [ -s "$dir/m3" ] || fail "merge: no output file"
    ok check --max-leak=1G "$dir/a.json"
    ok replay --device-memory=1G --model=driver --json "$dir/a.cftrace"
    ok report --html="$dir/p.html" --model=arena "$dir/a.cftrace"
    # import takes -o and --output too (a snapshot exported from the trace).
    ok export --format torch-snapshot -o "$dir/s.pickle" "$dir/a.cftrace"
    ok import -o "$dir/i1.cftrace" "$dir/s.pickle"
    ok import "-o$dir/i2.cftrace" "$dir/s.pickle"
    ok import --output="$dir/i3.cftrace" "$dir/s.pickle"
    for i in 1 2 3; do
        ok report "$dir/i$i.cftrace"
    done
    # The options of run end at the program: what follows is the program's.
    out=$("$cudafrag" run printf '%s\n' --sim -o x) || fail "run: status $?"
    [ "$out" = "--sim
-o
x" ] || fail "run passed '$out' to the program"
    out=$("$cudafrag" run --stack-depth=3 -- printenv CUDAFRAG_STACK_DEPTH) || fail "run: status $?"
    [ "$out" = 3 ] || fail "run --stack-depth=3: '$out'";;
opt-errors)
    # Bad values refused, each error two lines, status 2 (D15).
    usage_error diff --top -1 a b
    usage_error diff --top 0 a b
    usage_error diff --top=x a b
    usage_error diff --json=yes a b
    usage_error diff a
    usage_error symbolize --build-id zz "$prog" 0x10
    usage_error symbolize --build-id abc "$prog" 0x10
    usage_error symbolize --build-id= "$prog" 0x10
    usage_error export --format nosuch x.cftrace
    usage_error export --device -1 --format folded x.cftrace
    usage_error export --bogus x.cftrace
    usage_error merge --top 3 x.json
    usage_error import a.pickle b.pickle
    usage_error check --max-leak lots x.json
    usage_error replay --check=0 x.cftrace
    usage_error report -x x.cftrace
    usage_error run --stack-depth
    grep -q -- "--stack-depth needs a value" "$dir/err" || fail "missing value: $(cat "$dir/err")"
    # A valid build-id is taken (an address no symbol covers is unknown, not an error).
    ok symbolize --build-id 0123456789abcdefABCDEF0123456789abcdef01 "$prog" 0x1
    # Each subcommand has its own --help.
    for sub in run report replay import symbolize export diff merge check; do
        out=$("$cudafrag" "$sub" --help) || fail "$sub --help: status $?"
        echo "$out" | grep -q "^usage: cudafrag $sub " || fail "$sub --help: '$out'"
    done;;
export-device)
    # --device names a device the trace has, and every format keeps to it (D15).
    trace one "$prog"
    for f in folded chrome-trace rmm-csv; do
        usage_error export --device 7 --format $f -o "$dir/o" "$dir/one.cftrace"
        grep -q "has device(s) 0$" "$dir/err" || fail "$f: message '$(head -1 "$dir/err")'"
        [ ! -e "$dir/o" ] || fail "$f --device 7: left an output file"
    done
    trace two "$two" SIMCUDA_DEVICES=2
    ok export --format rmm-csv "$dir/two.cftrace"
    all=$(grep -c ',allocate,' "$dir/out")
    ok export --format rmm-csv --device 0 "$dir/two.cftrace"
    d0=$(grep -c ',allocate,' "$dir/out")
    ok export --format rmm-csv --device 1 "$dir/two.cftrace"
    d1=$(grep -c ',allocate,' "$dir/out")
    [ "$all" -eq 5 ] && [ "$d0" -eq 2 ] && [ "$d1" -eq 3 ] ||
        fail "rmm-csv allocations: all $all, device 0 $d0, device 1 $d1 (want 5, 2, 3)"
    ok export --format chrome-trace --device 1 "$dir/two.cftrace"
    grep -q '"device 1 memory"' "$dir/out" || fail "chrome-trace --device 1: no device 1 track"
    ! grep -q '"device 0 ' "$dir/out" || fail "chrome-trace --device 1: device 0 in it"
    ok export --format chrome-trace "$dir/two.cftrace"
    grep -q '"device 0 memory"' "$dir/out" || fail "chrome-trace: no device 0 track";;
report-json-html)
    # Two reports asked for at once: refused, not one silently dropped (D15).
    trace a "$prog"
    usage_error report --json --html "$dir/p.html" "$dir/a.cftrace"
    [ ! -e "$dir/p.html" ] || fail "report --json --html wrote the page"
    ok report --json "$dir/a.cftrace"
    ok report --html "$dir/p.html" "$dir/a.cftrace";;
same-file)
    # An output that is an input is refused before anything is written (D9),
    # whatever its name.
    trace a "$prog"
    ok export --format torch-snapshot -o "$dir/s.pickle" "$dir/a.cftrace"
    for f in a.cftrace a.json s.pickle; do
        cp "$dir/$f" "$dir/$f.orig"
    done
    ln "$dir/a.cftrace" "$dir/hard.cftrace"
    ln -s a.json "$dir/link.json"
    usage_error export "$dir/a.cftrace" --format folded -o "$dir/a.cftrace"
    grep -q "the output $dir/a.cftrace is the input" "$dir/err" || fail "message: $(cat "$dir/err")"
    usage_error export "$dir/a.cftrace" --format chrome-trace -o "$dir/hard.cftrace"
    usage_error report "$dir/a.cftrace" --html "$dir/a.cftrace"
    usage_error merge -o "$dir/a.json" "$dir/a.json"
    usage_error merge -o "$dir/link.json" "$dir/a.cftrace" "$dir/a.json"
    usage_error import --output "$dir/s.pickle" "$dir/s.pickle"
    for f in a.cftrace a.json s.pickle; do
        cmp -s "$dir/$f" "$dir/$f.orig" || fail "$f was changed"
    done;;
pipes)
    # Reports and traces read from pipes and FIFOs, each read once (D12).
    trace a "$prog"
    trace b "$prog"
    cat "$dir/a.json" | "$cudafrag" diff /dev/stdin "$dir/b.json" >"$dir/out" 2>"$dir/err" ||
        fail "diff from a pipe (JSON): status $?"
    grep -q "A /dev/stdin" "$dir/out" || fail "diff from a pipe: $(cat "$dir/out")"
    cat "$dir/a.cftrace" | "$cudafrag" diff --json "$dir/b.json" /dev/stdin >"$dir/out" 2>"$dir/err" ||
        fail "diff from a pipe (trace): status $?"
    cat "$dir/a.json" | "$cudafrag" check /dev/stdin --max-leak 1G 2>"$dir/err" ||
        fail "check from a pipe: status $?"
    mkfifo "$dir/fifo" "$dir/fifo2" || fail "mkfifo"
    cat "$dir/a.cftrace" >"$dir/fifo" &
    cat "$dir/b.json" >"$dir/fifo2" &
    "$cudafrag" merge --json "$dir/fifo" "$dir/fifo2" >"$dir/out" 2>"$dir/err" ||
        fail "merge from FIFOs: status $?"
    wait
    grep -q '"ranks":\[{' "$dir/out" || fail "merge from FIFOs: $(cat "$dir/out")"
    cat "$dir/a.cftrace" >"$dir/fifo" &
    "$cudafrag" check "$dir/fifo" --max-peak-live 1G 2>"$dir/err" || fail "check from a FIFO: status $?"
    wait
    cat "$dir/a.cftrace" | "$cudafrag" report /dev/stdin >"$dir/out" 2>"$dir/err" ||
        fail "report from a pipe: status $?"
    cat "$dir/a.cftrace" | "$cudafrag" export /dev/stdin --format folded >"$dir/out" 2>"$dir/err" ||
        fail "export from a pipe: status $?"
    ok export --format torch-snapshot -o "$dir/s.pickle" "$dir/a.cftrace"
    cat "$dir/s.pickle" | "$cudafrag" import -o "$dir/i.cftrace" /dev/stdin >"$dir/out" 2>"$dir/err" ||
        fail "import from a pipe: status $?";;
*) fail "unknown case";;
esac
exit 0
