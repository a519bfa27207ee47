#!/bin/sh
# Usage: symbolize.sh CUDAFRAG CASE SYM_INLINE SYM_INLINE_NOPIE SYM_CXX SOURCE_DIR LIBCUDAFRAG
# cudafrag symbolize on programs built here: exact function, file and line of each
# frame (lines marked SYM_* in the sources), inlined chains, C++ names, separate
# debug information, replaced and unreadable modules.
set -u
cudafrag=$1 case=$2 prog=$(realpath "$3") nopie=$4 cxx=$5 src=$6 lib=$7
t_case=$case
. "$(dirname "$0")/../lib.sh"
# Under AddressSanitizer the command is also checked for leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
scratch

line_of() { # MARKER FILE: the line number holding the marker
    n=$(grep -n "$1" "$2" | cut -d: -f1)
    [ -n "$n" ] || fail "no $1 in $2"
    echo "$n"
}
# A value the program printed as "KEY VALUE".
printed() { echo "$2" | sed -n "s/^$1 //p"; }
# A return address minus 1: the call instruction, as a trace is symbolized.
call_of() { printf '%x' $(($1 - 1)); }
# Frame N (1-based) of OUT matches the pattern; its file exists.
frame() { # OUT N PATTERN
    got=$(echo "$1" | sed -n "$2p")
    echo "$got" | grep -qE "$3" || fail "frame $2 '$got', want /$3/ in:
$1"
    file=$(echo "$got" | awk '{print $3}')
    file=${file%:*}
    [ -f "$file" ] || fail "frame $2: no such file '$file'"
}
frames() { # OUT N: exactly N frames
    [ "$(echo "$1" | wc -l)" -eq "$2" ] || fail "want $2 frames, got:
$1"
}
symbolize() { "$cudafrag" symbolize "$@" 2>"$dir/err"; }

c_src=$src/sym_inline.c
# A non-PIE executable is loaded at its link addresses (bias 0).
if [ "$case" = non-pie ]; then
    readelf -h "$nopie" | grep -q 'Type: *EXEC' || fail "$nopie is not ET_EXEC"
    prog=$nopie
fi
run=$("$prog") || fail "$prog failed"
inl=$(call_of "$(printed inlined "$run")")
in_main=$(call_of "$(printed main "$run")")

case $case in
inline | non-pie)
    out=$(symbolize "$prog" "$inl") || fail "status $?: $(cat "$dir/err")"
    frames "$out" 2
    frame "$out" 1 "^0x$inl scaled /.*/sym_inline\.c:$(line_of SYM_INLINED "$c_src") \(inlined\)$"
    frame "$out" 2 "^0x$inl sym_outer /.*/sym_inline\.c:$(line_of SYM_CALLS_INLINED "$c_src")$"
    out=$(symbolize "$prog" "0x$in_main") || fail "status $?"
    frames "$out" 1
    frame "$out" 1 "^0x$in_main main /.*/sym_inline\.c:$(line_of SYM_MAIN "$c_src")$";;
cxx)
    run=$("$cxx") || fail "$cxx failed"
    module=$(printed module "$run")
    off=$(call_of "$(printed inlined "$run")")
    case $module in /*/*.so) ;; *) fail "module '$module'";; esac
    out=$(symbolize "$module" "$off") || fail "status $?: $(cat "$dir/err")"
    frames "$out" 2
    cxx_src=$src/sym_cxx_lib.cpp
    frame "$out" 1 "^0x$off demo::inner::twice\(int\) /.*/sym_cxx_lib\.cpp:$(line_of SYM_CXX_INLINED "$cxx_src") \(inlined\)$"
    frame "$out" 2 "^0x$off demo::inner::compute\(int\) /.*/sym_cxx_lib\.cpp:$(line_of SYM_CXX_CALLS_INLINED "$cxx_src")$"
    # Names from the symbol table alone are demangled too.
    objcopy --strip-debug "$module" "$dir/lib.so" || fail "objcopy --strip-debug"
    out=$(symbolize "$dir/lib.so" "$off") || fail "status $?"
    [ "$out" = "0x$off demo::inner::compute(int) ??:0" ] || fail "symbol table only: $out";;
debuglink)
    # Debug information in a separate file, found through the stripped file's
    # .gnu_debuglink as distributions ship it.
    objcopy --only-keep-debug "$prog" "$dir/prog.debug" || fail "objcopy --only-keep-debug"
    (cd "$dir" && objcopy --strip-debug --add-gnu-debuglink=prog.debug "$prog" prog) ||
        fail "objcopy --strip-debug"
    out=$(symbolize "$dir/prog" "$inl") || fail "status $?: $(cat "$dir/err")"
    frames "$out" 2
    frame "$out" 1 "^0x$inl scaled /.*/sym_inline\.c:$(line_of SYM_INLINED "$c_src") \(inlined\)$"
    # Without it only the symbol table is left: names, no lines.
    rm "$dir/prog.debug"
    out=$(symbolize "$dir/prog" "$inl" "$in_main") || fail "status $?"
    [ "$out" = "0x$inl sym_outer ??:0
0x$in_main main ??:0" ] || fail "symbol table only: $out";;
build-id)
    id=$(readelf -n "$prog" | sed -n 's/^ *Build ID: *//p')
    [ -n "$id" ] || fail "no build-id in $prog"
    out=$(symbolize --build-id "$id" "$prog" "$in_main") || fail "status $?"
    frame "$out" 1 "^0x$in_main main /.*/sym_inline\.c:$(line_of SYM_MAIN "$c_src")$"
    [ ! -s "$dir/err" ] || fail "warning for the right build-id: $(cat "$dir/err")"
    other=0123456789abcdef0123456789abcdef01234567
    out=$(symbolize --build-id $other "$prog" "$inl" "$in_main") || fail "status $?"
    [ "$out" = "0x$inl ?? (build-id mismatch)
0x$in_main ?? (build-id mismatch)" ] || fail "mismatch printed: $out"
    grep -q "build-id $id, but $other when traced" "$dir/err" || fail "warning: $(cat "$dir/err")"
    [ "$(wc -l <"$dir/err")" -eq 1 ] || fail "not warned once: $(cat "$dir/err")";;
system-debuginfo)
    # A stripped system library whose debug information is installed under
    # /usr/lib/debug/.build-id (libc6-dbg), found by the library's build-id.
    libc=$(ldd "$prog" | sed -n 's/.*=> \(\/[^ ]*libc\.so\.6\) .*/\1/p')
    id=$(readelf -n "$libc" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
    rest=${id#??}
    [ -n "$id" ] && [ -f "/usr/lib/debug/.build-id/${id%"$rest"}/$rest.debug" ] ||
        { echo "no debug information installed for $libc: skipped"; exit 77; }
    off=$(nm -D "$libc" | awk '$2 == "T" && $3 ~ /^malloc@/ {print $1; exit}')
    [ -n "$off" ] || fail "no malloc in $libc"
    out=$(symbolize --build-id "$id" "$libc" "$off") || fail "status $?: $(cat "$dir/err")"
    echo "$out" | tail -n 1 | grep -qE "^0x${off#"${off%%[!0]*}"} [^ ]*malloc[^ ]* [^ ]*/malloc\.c:[1-9][0-9]*$" ||
        fail "malloc in $libc: $out";;
unreadable)
    symbolize /nonexistent/libgone.so 0x10; rc=$?
    [ $rc -eq 1 ] || fail "missing module: status $rc"
    grep -qx "cudafrag: cannot open /nonexistent/libgone.so: No such file or directory" "$dir/err" ||
        fail "missing module: $(cat "$dir/err")"
    printf 'not an ELF file\n' >"$dir/text"
    out=$(symbolize "$dir/text" 0x10); rc=$?
    [ $rc -eq 1 ] && [ -z "$out" ] || fail "text file: status $rc, '$out'"
    grep -q "cannot read $dir/text: " "$dir/err" || fail "text file: $(cat "$dir/err")"
    for f in "$dir" /dev/null; do
        symbolize "$f" 0x10; rc=$?
        [ $rc -eq 1 ] || fail "$f: status $rc"
        grep -q "cannot read $f: " "$dir/err" || fail "$f: $(cat "$dir/err")"
    done
    # An address no symbol covers is unknown, not an error.
    out=$(symbolize "$prog" 0x1) || fail "status $?"
    [ "$out" = "0x1 ??" ] || fail "address 0x1: '$out'";;
bad-args)
    for args in "$prog" "$prog xyz" "$prog 0x10zz" "$prog -1" "--bogus $prog 0x10"; do
        # shellcheck disable=SC2086
        out=$(symbolize $args); rc=$?
        [ $rc -eq 2 ] && [ -z "$out" ] || fail "'$args': status $rc, '$out'"
        grep -q "usage: cudafrag" "$dir/err" || fail "'$args': no usage"
    done
    symbolize --build-id; rc=$?
    [ $rc -eq 2 ] || fail "--build-id without a value: status $rc"
    grep -q -- "--build-id needs a value" "$dir/err" || fail "--build-id: $(cat "$dir/err")";;
library-deps)
    # libdw is the command's: the preloaded library must not bring it (or CUDA, or an
    # unwinder it loads privately) into every profiled program.
    readelf -d "$cudafrag" | grep -q 'NEEDED.*\[libdw\.so' || fail "cudafrag does not link libdw"
    needed=$(readelf -d "$lib" | grep NEEDED) || fail "readelf -d $lib"
    if echo "$needed" | grep -E '\[lib(dw|elf|cuda|cudart|unwind|stdc\+\+)[.-]'; then
        fail "libcudafrag.so links one of the above"
    fi;;
*) fail "unknown case";;
esac
exit 0
