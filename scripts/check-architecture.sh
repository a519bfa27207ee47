#!/bin/sh
# check-architecture.sh [SOURCE_ROOT]: docs/architecture.md has one line for every
# .c and .h file under src/ -- a table row whose first cell is the file's path in
# backquotes -- and names no file that does not exist. On failure it prints the
# rows to add (to fill in) and the lines to remove, exactly.
set -u
root=${1:-$(dirname "$0")/..}
doc=$root/docs/architecture.md
[ -f "$doc" ] || { echo "FAIL: $doc not found" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && find src -name '*.c' -o -name '*.h') | LC_ALL=C sort >"$tmp/files"
# "| `src/x/y.c` | ..." -> "LINE src/x/y.c"
sed -n 's/^| `\(src\/[^`]*\)` |.*/\1/p' "$doc" >"$tmp/paths"
grep -n '^| `src/[^`]*` |' "$doc" | sed 's/^\([0-9]*\):| `\([^`]*\)`.*/\1 \2/' >"$tmp/rows"
LC_ALL=C sort "$tmp/paths" >"$tmp/all"
LC_ALL=C sort -u "$tmp/paths" >"$tmp/mapped"

bad=0
missing=$(LC_ALL=C comm -23 "$tmp/files" "$tmp/mapped")
if [ -n "$missing" ]; then
    echo "docs/architecture.md has no line for these files; add under their folder's heading:"
    for f in $missing; do
        echo "| \`$f\` | (what it holds) |"
    done
    bad=1
fi
stale=$(LC_ALL=C comm -13 "$tmp/files" "$tmp/mapped")
if [ -n "$stale" ]; then
    echo "docs/architecture.md names files that do not exist; remove these lines:"
    for f in $stale; do
        awk -v f="$f" '$2 == f { print "  line " $1 ": " f }' "$tmp/rows"
    done
    bad=1
fi
dups=$(uniq -d "$tmp/all")
if [ -n "$dups" ]; then
    echo "docs/architecture.md has more than one line for these files; keep one:"
    for f in $dups; do
        awk -v f="$f" '$2 == f { print "  line " $1 ": " f }' "$tmp/rows"
    done
    bad=1
fi
[ "$bad" -eq 0 ] && echo "architecture: $(wc -l <"$tmp/files") files under src/, one line each"
exit "$bad"
