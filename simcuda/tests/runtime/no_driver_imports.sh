#!/bin/sh
# The shared runtime must not link the driver: it may import no cu* symbol and
# must not list libcuda as a needed library (it dlopens it on first use).
set -e
lib="$1"
if nm -D --undefined-only "$lib" | awk '{print $NF}' | grep -E '^cu[A-Z]'; then
    echo "imports driver symbols" >&2
    exit 1
fi
if readelf -d "$lib" | grep -F 'libcuda.so'; then
    echo "links libcuda" >&2
    exit 1
fi
nm -D --defined-only "$lib" | grep -q ' cudaMalloc@@libcudart.so.13$'
