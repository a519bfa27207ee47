#!/bin/sh
# Usage: bad_env.sh CUDAFRAG LIBCUDAFRAG PROGRAM
# Every CUDAFRAG_* variable the cudafrag command documents, set to empty,
# garbage, negative, huge and out-of-range values: exactly one warning line that
# names the variable, what it accepts and the default used; the program's output
# and exit status unchanged.
set -u
# Absolute paths: the runs below happen in a scratch directory.
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
cli=$(abs "$1") lib=$(abs "$2") prog=$(abs "$3")
. "$(dirname "$0")/../lib.sh"
scratch
cd "$dir" || exit 1
export CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT=

"$cli" --help >help.txt || fail "cudafrag --help failed"
# "  CUDAFRAG_TOP             int 1..1000  default "10"" -> NAME TYPE DEFAULT
sed -n 's/^  \(CUDAFRAG_[A-Z0-9_]*\)  *\(bool\|int [0-9]*\.\.[0-9]*\|size\|string\)  *default "\(.*\)"$/\1|\2|\3/p' \
    help.txt >vars
[ "$(wc -l <vars)" -ge 10 ] || fail "cannot read the variables from cudafrag --help: $(cat help.txt)"

LD_PRELOAD="$lib" "$prog" >want.out 2>want.err
want_rc=$?
[ "$want_rc" -eq 3 ] || fail "baseline status $want_rc"
grep -q cudafrag want.err && fail "baseline run printed: $(cat want.err)"

# check NAME VALUE ACCEPTED DEFAULT
check() {
    env "$1=$2" LD_PRELOAD="$lib" "$prog" >got.out 2>got.err
    rc=$?
    [ $rc -eq $want_rc ] || fail "$1='$2': status $rc, want $want_rc"
    cmp -s want.out got.out || fail "$1='$2': the program's output changed"
    grep -qx "app stderr line" got.err || fail "$1='$2': the program's stderr line is gone"
    lines=$(grep -c '^cudafrag:' got.err)
    [ "$lines" -eq 1 ] || fail "$1='$2': $lines cudafrag lines, want one: $(cat got.err)"
    grep -q "^cudafrag: ignoring $1=\".*\": expected $3; using the default $4\$" got.err ||
        fail "$1='$2': warning does not name the variable, accepted values and default: $(cat got.err)"
}

n=0
while IFS='|' read -r name type def; do
    case $type in
    bool)
        accepted='1/yes/on/true or 0/no/off/false'
        extra='2 -1x yes!';;
    int*)
        range=${type#int }
        lo=${range%..*} hi=${range#*..}
        accepted="an integer from $lo to $hi"
        extra="$((hi + 1)) 1.5 0x10 ${lo}abc"
        [ "$lo" -gt 0 ] && extra="$extra $((lo - 1))";;
    size)
        accepted='a byte count with an optional K, M, G or T suffix'
        extra='18446744073709551616 16777216T 12Q 1.5G';;
    string)
        # Any text is accepted: an odd value must neither warn nor break the
        # program (for the output pattern: files named as written, here in $dir).
        env "$name=odd%q%" LD_PRELOAD="$lib" "$prog" >got.out 2>got.err
        [ $? -eq $want_rc ] || fail "$name=odd%q%: status changed"
        cmp -s want.out got.out || fail "$name=odd%q%: the program's output changed"
        grep -q '^cudafrag:' got.err && fail "$name=odd%q%: $(cat got.err)"
        n=$((n + 1))
        continue;;
    esac
    for v in '' garbage -5 99999999999999999999 $extra; do
        check "$name" "$v" "$accepted" "$def"
        n=$((n + 1))
    done
done <vars
[ $n -ge 50 ] || fail "only $n cases ran"
echo "$n bad settings checked"
exit 0
