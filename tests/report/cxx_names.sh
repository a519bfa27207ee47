#!/bin/sh
# cxx_names.sh LIBCUDAFRAG PROGRAM: the text report names the C++ call site
# demangled, as "pipeline::scratch<float>(unsigned int)", through the program's
# own libstdc++ demangler.
set -u
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
LD_PRELOAD="$1" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 "$2" >/dev/null || exit 1
grep -q 'pipeline::scratch<float>(unsigned int)' "$dir/r.txt" && exit 0
echo "no demangled call site in the report:" >&2
grep -m3 'scratch' "$dir/r.txt" >&2
exit 1
