#!/bin/sh
# cxx_names.sh LIBCUDAFRAG PROGRAM [NAME [ARG]]: the text report names the C++ call
# site demangled (NAME, by default "pipeline::scratch<float>(unsigned int)")
# through the program's own libstdc++ demangler, also when the program loaded
# libstdc++ privately with a library (ARG: that library, for cxx_local).
set -u
lib=$1 prog=$2
want=${3:-'pipeline::scratch<float>(unsigned int)'}
. "$(dirname "$0")/../lib.sh"
scratch
profiled "$prog" ${4:+"$4"} >/dev/null || exit 1
grep -qF "$want" "$dir/r.txt" && exit 0
echo "no demangled call site in the report:" >&2
grep -m3 -e 'scratch' -e 'workspace' "$dir/r.txt" >&2
exit 1
