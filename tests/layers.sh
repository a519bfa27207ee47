#!/bin/sh
# layers.sh SRC_DIR: no #include goes from a lower layer of src/ to a higher one.
# Layers, bottom first: base, config, arena, record, report, hook, then the
# replay models and the command (replay, cli). A folder may use its own layer and
# any below it.
set -u
src=${1:-$(dirname "$0")/../src}
rank() {
    case $1 in
    base) echo 0 ;; config) echo 1 ;; arena) echo 2 ;; record) echo 3 ;; report) echo 4 ;;
    hook) echo 5 ;; replay) echo 6 ;; cli) echo 7 ;; *) echo -1 ;;
    esac
}
bad=0
for f in $(find "$src" -name '*.c' -o -name '*.h' | sort); do
    rel=${f#"$src"/}
    own=$(rank "${rel%%/*}")
    [ "$own" -ge 0 ] || continue
    for inc in $(sed -n 's/^#include "\([a-z_]*\)\/.*/\1/p' "$f" | sort -u); do
        r=$(rank "$inc")
        [ "$r" -ge 0 ] || continue
        if [ "$r" -gt "$own" ]; then
            echo "upward include: $rel includes $inc/ ($inc is above ${rel%%/*})"
            bad=$((bad + 1))
        fi
    done
done
[ "$bad" -eq 0 ] && echo "layers: no upward include"
[ "$bad" -eq 0 ]
