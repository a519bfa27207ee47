#!/bin/sh
# cxx_names.sh LIBCUDAFRAG PROGRAM [NAME [ARG]]: the text report names the C++ call
# site demangled (NAME, by default "pipeline::scratch<float>(unsigned int)")
# through the program's own libstdc++ demangler, also when the program loaded
# libstdc++ privately with a library (ARG: that library, for cxx_local).
set -u
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
want=${3:-'pipeline::scratch<float>(unsigned int)'}
LD_PRELOAD="$1" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 "$2" ${4:+"$4"} >/dev/null || exit 1
grep -qF "$want" "$dir/r.txt" && exit 0
echo "no demangled call site in the report:" >&2
grep -m3 -e 'scratch' -e 'workspace' "$dir/r.txt" >&2
exit 1
