#!/bin/sh
# Usage: blocks.sh CUDAFRAG FAKE_FRAMEWORK TEST_SOURCE_DIR CASE
# `cudafrag run --blocks` on the simulated device: the frameworks' switches are
# set (the user's kept), a framework that honours them hands cudafrag its
# tensors one by one, the arena serves them, and the report, the trace and the
# replay name the switches.
set -u
cudafrag=$1 fake=$2 src=$3 case=$4
. "$(dirname "$0")/../lib.sh"
t_case=$case
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
cudafrag=$(abs "$cudafrag") fake=$(abs "$fake")
scratch
work=$dir
cd "$work" || exit 1
# A clean slate: none of the switches comes from the environment running the test.
unset PYTORCH_NO_CUDA_MEMORY_CACHING PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF \
    XLA_PYTHON_CLIENT_ALLOCATOR XLA_PYTHON_CLIENT_PREALLOCATE XLA_PYTHON_CLIENT_MEM_FRACTION \
    XLA_CLIENT_MEM_FRACTION CUDAFRAG_ARENA CUDAFRAG_BLOCKS PYTHONPATH

# json FILE EXPR: a Python expression over the parsed file (as j), printed.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# run_fake MODE NAME [--blocks]: runs the fake framework traced; stdout to NAME.out,
# stderr to NAME.err, reports to NAME.txt/.json, trace to NAME.cftrace.
run_fake() {
    mode=$1 name=$2
    shift 2
    "$cudafrag" run --sim --trace "$@" --output "$name" -- "$fake" "$mode" \
        >"$name.out" 2>"$name.err" || fail "$name: status $? ($(cat "$name.err"))"
}

# capture MODE API: without --blocks the report sees the cache's one segment;
# with it, every tensor, each served by the arena; everything names the switch.
capture() {
    mode=$1 api=$2 switch=$3
    need python3
    run_fake "$mode" cached
    grep -q "^$mode cached tensors 240 driver-allocations 1\$" cached.out ||
        fail "without --blocks: $(cat cached.out)"
    [ "$(json cached.json "j['summary']['allocs']")" = 1 ] ||
        fail "without --blocks the report saw $(json cached.json "j['summary']['allocs']") allocations"
    [ "$(json cached.json "j['block_capture']")" = None ] || fail "block_capture without --blocks"
    grep -q '^blocks ' cached.txt && fail "a blocks header line without --blocks"

    run_fake "$mode" blocks --blocks
    grep -q "^$mode blocks tensors 240 driver-allocations 240\$" blocks.out ||
        fail "with --blocks the framework did not switch: $(cat blocks.out)"
    [ "$(grep -c -- '--blocks set' blocks.err)" = 1 ] || fail "not one line: $(cat blocks.err)"
    grep -q -- "--blocks set .*$switch" blocks.err || fail "the line does not name $switch"
    [ "$(json blocks.json "j['summary']['allocs']")" = 240 ] ||
        fail "with --blocks the report saw $(json blocks.json "j['summary']['allocs']") allocations"
    [ "$(json blocks.json "[a['calls'] for a in j['apis'] if a['name']=='$api'][0]")" = 240 ] ||
        fail "not 240 $api calls"
    [ "$(json blocks.json "j['arena_vs_native']['arena']['allocs_served']")" = 240 ] ||
        fail "the arena served $(json blocks.json "j['arena_vs_native']['arena']['allocs_served']")"
    [ "$(json blocks.json "'$switch' in j['block_capture']")" = True ] ||
        fail "JSON block_capture: $(json blocks.json "j['block_capture']")"
    grep -q "^blocks  .*$switch" blocks.txt || fail "no blocks line in the report header"
    # The allocation rate is of --blocks' making, and the finding says so.
    [ "$(json blocks.json "any(f['id'] == 'alloc-rate' and 'cudafrag run --blocks' in f['advice'] for f in j['findings'])")" = True ] ||
        fail "the alloc-rate finding does not mention --blocks"
    # The trace carries it: the report from the trace and the replay say it too.
    "$cudafrag" report blocks.cftrace >replayed.txt || fail "cudafrag report"
    grep -q "^blocks  .*$switch" replayed.txt || fail "cudafrag report TRACE does not name it"
    "$cudafrag" report --json blocks.cftrace >replayed.json || fail "cudafrag report --json"
    [ "$(json replayed.json "'$switch' in j['block_capture']")" = True ] ||
        fail "cudafrag report --json TRACE: no block_capture"
    "$cudafrag" report --html blocks.html blocks.cftrace || fail "cudafrag report --html"
    grep -q "framework caches bypassed (cudafrag run --blocks): .*$switch" blocks.html ||
        fail "the HTML report does not name it"
    "$cudafrag" replay blocks.cftrace >whatif.txt || fail "cudafrag replay"
    grep -q "^blocks: .*$switch" whatif.txt || fail "cudafrag replay does not name it"
    "$cudafrag" replay --json blocks.cftrace >whatif.json || fail "cudafrag replay --json"
    [ "$(json whatif.json "'$switch' in j['block_capture']")" = True ] ||
        fail "cudafrag replay --json: no block_capture"
    "$cudafrag" replay cached.cftrace | grep -q '^blocks:' && fail "replay names a switch without --blocks"
    cache_note "$mode"
    return 0
}

# cache_note MODE: a trace of PyTorch's cache (its one segment from libc10_cuda.so)
# is said not to be block-level by replay (text, JSON) and the HTML page, in the
# same words; the --blocks trace, and one with the user's own switch (tensor
# sizes from the same library), are not. The JAX stand-in's pool is not told apart
# (docs/replay.md): no note.
cache_note() {
    "$cudafrag" replay --json cached.cftrace >cached-whatif.json || fail "replay --json cached"
    "$cudafrag" replay cached.cftrace >cached-whatif.txt || fail "replay cached"
    "$cudafrag" report --html cached.html cached.cftrace || fail "report --html cached"
    for f in blocks.html whatif.json; do
        grep -q 'not block-level' $f && fail "$f: a note on the --blocks trace"
    done
    if [ "$1" = jax ]; then
        [ "$(json cached-whatif.json "j['framework_cache']")" = None ] || fail "a note on JAX"
        return 0
    fi
    [ "$(json cached-whatif.json "(j['framework_cache']['framework'], j['framework_cache']['module'], j['framework_cache']['allocations'], j['framework_cache']['of'])")" = "('PyTorch', 'libc10_cuda.so', 1, 1)" ] ||
        fail "framework_cache: $(json cached-whatif.json "j['framework_cache']")"
    grep -q '^not block-level: 1 of 1 allocations replayed came from PyTorch' cached-whatif.txt ||
        fail "the text replay has no note: $(cat cached-whatif.txt)"
    # The same words in all three: the text's lines, JSON's note, the page's paragraph.
    python3 - cached-whatif.txt cached-whatif.json cached.html <<'PY' || fail "the note differs"
import html, json, re, sys
text = open(sys.argv[1]).read()
note = json.load(open(sys.argv[2]))["framework_cache"]["note"]
page = re.search(r'<p class="warn" id="whatif-not-block-level">(.*?)</p>', open(sys.argv[3]).read(), re.S)
assert note in text, "text"
assert page and html.unescape(page.group(1)) == note, "html"
PY
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 run_fake torch own
    grep -q "^torch blocks tensors 240" own.out || fail "the user's switch: $(cat own.out)"
    "$cudafrag" replay --json own.cftrace >own-whatif.json || fail "replay --json own"
    [ "$(json own-whatif.json "j['framework_cache']")" = None ] ||
        fail "a note on tensors allocated with the user's own switch"
}

case $case in
environment)
    out=$("$cudafrag" run --blocks -- printenv PYTORCH_NO_CUDA_MEMORY_CACHING \
          XLA_PYTHON_CLIENT_ALLOCATOR CUDAFRAG_ARENA PYTHONPATH 2>err) || fail "status $?"
    set -- $out
    [ "$1" = 1 ] || fail "PYTORCH_NO_CUDA_MEMORY_CACHING '$1'"
    [ "$2" = platform ] || fail "XLA_PYTHON_CLIENT_ALLOCATOR '$2'"
    [ "$3" = 1 ] || fail "CUDAFRAG_ARENA '$3'"
    [ -f "$4/sitecustomize.py" ] || fail "PYTHONPATH '$4' has no CuPy hook"
    [ "$(grep -c . err)" = 1 ] || fail "not exactly one line: $(cat err)"
    grep -q "^cudafrag: --blocks set PYTORCH_NO_CUDA_MEMORY_CACHING=1, XLA_PYTHON_CLIENT_ALLOCATOR=platform, CuPy's memory pools off at import .*, CUDAFRAG_ARENA=1" err ||
        fail "the line: $(cat err)"
    blocks=$("$cudafrag" run --blocks -- printenv CUDAFRAG_BLOCKS 2>/dev/null)
    [ "$blocks" = "PYTORCH_NO_CUDA_MEMORY_CACHING=1; XLA_PYTHON_CLIENT_ALLOCATOR=platform; cupy.cuda.set_allocator(None) at import" ] ||
        fail "CUDAFRAG_BLOCKS '$blocks'"
    # Without --blocks nothing is set.
    [ -z "$("$cudafrag" run -- printenv CUDAFRAG_BLOCKS PYTORCH_NO_CUDA_MEMORY_CACHING)" ] ||
        fail "set without --blocks"
    # Nested runs and a PYTHONPATH of the user's: the hook once, first, the rest kept.
    pp=$(PYTHONPATH=/mine "$cudafrag" run --blocks -- "$cudafrag" run --blocks -- printenv PYTHONPATH 2>/dev/null)
    case $pp in
    /*/python:/mine) ;;
    *) fail "nested PYTHONPATH '$pp'";;
    esac;;
user-settings)
    # Every switch the user set is kept and named; nothing is overridden.
    out=$(PYTORCH_NO_CUDA_MEMORY_CACHING=0 XLA_PYTHON_CLIENT_ALLOCATOR=bfc CUDAFRAG_ARENA=0 \
          "$cudafrag" run --blocks -- printenv PYTORCH_NO_CUDA_MEMORY_CACHING \
          XLA_PYTHON_CLIENT_ALLOCATOR CUDAFRAG_ARENA CUDAFRAG_BLOCKS 2>err) || fail "status $?"
    [ "$(echo "$out" | sed -n 1,3p | tr '\n' ' ')" = "0 bfc 0 " ] || fail "overridden: $out"
    [ "$(echo "$out" | sed -n 4p)" = "PYTORCH_NO_CUDA_MEMORY_CACHING=0 (user's); XLA_PYTHON_CLIENT_ALLOCATOR=bfc (user's); cupy.cuda.set_allocator(None) at import" ] ||
        fail "CUDAFRAG_BLOCKS: $(echo "$out" | sed -n 4p)"
    grep -q "kept yours: PYTORCH_NO_CUDA_MEMORY_CACHING=0, XLA_PYTHON_CLIENT_ALLOCATOR=bfc, CUDAFRAG_ARENA=0" err ||
        fail "the kept settings are not named: $(cat err)"
    grep -q "note: PyTorch: with your PYTORCH_NO_CUDA_MEMORY_CACHING=0 its caching allocator stays on" err ||
        fail "no note on caching left on: $(cat err)"
    grep -q "note: JAX: with your XLA_PYTHON_CLIENT_ALLOCATOR=bfc XLA keeps its own pool" err ||
        fail "no note on XLA's pool: $(cat err)"
    # PyTorch's cudaMallocAsync backend: left alone, the no-caching switch not set.
    out=$(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$cudafrag" run --blocks -- \
          sh -c 'echo "${PYTORCH_NO_CUDA_MEMORY_CACHING-unset} $PYTORCH_CUDA_ALLOC_CONF"' 2>err)
    [ "$out" = "unset backend:cudaMallocAsync" ] || fail "async backend: $out"
    grep -q "note: PyTorch: your PYTORCH_CUDA_ALLOC_CONF picks the cudaMallocAsync backend" err ||
        fail "no note on the async backend: $(cat err)"
    both=$(PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
           "$cudafrag" run --blocks -- printenv CUDAFRAG_BLOCKS 2>/dev/null)
    case $both in
    "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (user's); PYTORCH_NO_CUDA_MEMORY_CACHING=1 (user's); "*) ;;
    *) fail "both PyTorch settings: $both";;
    esac
    # Caching-allocator settings and XLA pool settings made moot are said so.
    PYTORCH_ALLOC_CONF=expandable_segments:True XLA_PYTHON_CLIENT_PREALLOCATE=false \
        "$cudafrag" run --blocks -- printenv PYTORCH_ALLOC_CONF XLA_PYTHON_CLIENT_PREALLOCATE \
        >out 2>err || fail "status $?"
    [ "$(tr '\n' ' ' <out)" = "expandable_segments:True false " ] || fail "changed: $(cat out)"
    grep -q "note: PyTorch: your PYTORCH_ALLOC_CONF=expandable_segments:True does not act while caching is off" err ||
        fail "no note on expandable segments: $(cat err)"
    grep -q "note: JAX: your XLA_PYTHON_CLIENT_PREALLOCATE=false does not act with the platform allocator" err ||
        fail "no note on preallocation: $(cat err)";;
torch)
    capture torch cudaMalloc PYTORCH_NO_CUDA_MEMORY_CACHING=1;;
jax)
    capture jax cuMemAlloc XLA_PYTHON_CLIENT_ALLOCATOR=platform;;
cupy)
    need python3
    export PYTHONPATH="$src/fakecupy"
    "$cudafrag" run --sim --output pool -- python3 "$src/cupy_app.py" >pool.out 2>pool.err ||
        fail "without --blocks: status $? $(cat pool.err)"
    [ "$(cat pool.out)" = "allocator pool" ] || fail "without --blocks: $(cat pool.out)"
    [ "$(json pool.json "j['summary']['allocs']")" = 1 ] || fail "without --blocks: not one segment"
    "$cudafrag" run --sim --blocks --output raw -- python3 "$src/cupy_app.py" >raw.out 2>raw.err ||
        fail "with --blocks: status $? $(cat raw.err)"
    [ "$(cat raw.out)" = "allocator raw" ] || fail "with --blocks the pool stayed: $(cat raw.out)"
    grep -q "^cudafrag: CuPy's memory pools are off (cudafrag run --blocks)" raw.err ||
        fail "the hook did not say so: $(cat raw.err)"
    [ "$(json raw.json "j['summary']['allocs']")" = 100 ] ||
        fail "with --blocks the report saw $(json raw.json "j['summary']['allocs']") allocations"
    [ "$(json raw.json "j['arena_vs_native']['arena']['allocs_served']")" = 100 ] ||
        fail "the arena did not serve the arrays"
    [ "$(json raw.json "'cupy.cuda.set_allocator(None) at import' in j['block_capture']")" = True ] ||
        fail "block_capture: $(json raw.json "j['block_capture']")"
    # A program without CuPy, one that tries to import it where there is none: the
    # hook does nothing and says nothing.
    "$cudafrag" run --blocks -- python3 -c 'print("fine")' >plain.out 2>plain.err || fail "plain"
    [ "$(cat plain.out)" = fine ] && ! grep -q "pools are off" plain.err || fail "hook in a program without CuPy"
    printf 'try:\n    import cupy\nexcept ImportError:\n    print("no cupy")\n' >optional.py
    env -u PYTHONPATH "$cudafrag" run --blocks -- python3 optional.py >opt.out 2>opt.err ||
        fail "optional import: status $?"
    [ "$(cat opt.out)" = "no cupy" ] || fail "optional import: $(cat opt.out)"
    [ "$(grep -c '^cudafrag' opt.err)" = 1 ] || fail "the hook spoke without CuPy: $(cat opt.err)"
    ;;
cupy-chain)
    # The user's own sitecustomize, which the hook shadows, still runs, once.
    need python3
    mkdir mine
    echo 'print("user sitecustomize ran")' >mine/sitecustomize.py
    out=$(PYTHONPATH="$work/mine:$src/fakecupy" "$cudafrag" run --sim --blocks -- \
          python3 "$src/cupy_app.py" 2>err) || fail "status $? $(cat err)"
    [ "$out" = "user sitecustomize ran
allocator raw" ] || fail "output: $out $(cat err)"
    # A failing one is reported in one line; the program and the hook go on.
    echo 'raise RuntimeError("broken")' >mine/sitecustomize.py
    out=$(PYTHONPATH="$work/mine:$src/fakecupy" "$cudafrag" run --sim --blocks -- \
          python3 "$src/cupy_app.py" 2>err) || fail "status $? $(cat err)"
    [ "$out" = "allocator raw" ] || fail "output with a broken sitecustomize: $out"
    grep -q "^cudafrag: the sitecustomize module on the rest of the path failed: RuntimeError: broken" err ||
        fail "no message: $(cat err)";;
*)
    fail "unknown case";;
esac
exit 0
