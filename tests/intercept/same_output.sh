#!/bin/sh
# Runs a program without and with libcudafrag.so preloaded: return codes,
# out-parameters and errno it prints must be identical.
prog=$1
lib=$2
without=$(env -u LD_PRELOAD "$prog") || { echo "failed without cudafrag"; exit 1; }
with=$(LD_PRELOAD="$lib" "$prog" count) || { echo "failed with cudafrag"; exit 1; }
if [ "$without" != "$with" ]; then
    printf 'output differs\n--- without cudafrag\n%s\n--- with cudafrag\n%s\n' "$without" "$with"
    exit 1
fi
printf '%s\n' "$with"
