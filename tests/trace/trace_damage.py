#!/usr/bin/env python3
"""trace_damage.py CUDAFRAG LIBCUDAFRAG PROG: a damaged trace is never reported
from, a truncated one is. Single bits of a small multi-thread trace are flipped
(every bit of the file header's fixed fields and check word and of a chunk
header, and a fixed sample of the header text and of every chunk's header and
payload): each flip either makes `cudafrag report` fail (exit 1, one line) or
leaves its report byte for byte as it was. `check`, `diff` and `merge` fail on
a damaged trace too. A trace cut inside a chunk (a killed process) reads up to
its last whole chunk and says it is truncated, not damaged."""
import os
import random
import struct
import subprocess
import shutil
import sys
import tempfile

CLI, LIB, PROG = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix="cf-damage-")
failures = []


def fail(msg):
    print("FAIL: %s (files kept in %s)" % (msg, TMP), file=sys.stderr)
    sys.exit(1)


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def make_trace():
    out = os.path.join(TMP, "r")
    env = dict(os.environ, LD_PRELOAD=LIB, CUDAFRAG_OUTPUT=out, CUDAFRAG_STDERR="0",
               CUDAFRAG_TRACE="1")
    p = subprocess.run([PROG, "threads", "300"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s failed: %s" % (PROG, p.stderr))
    with open(out + ".cftrace", "rb") as f:
        return f.read()


def layout(data):
    """(end of the file header, [(chunk start, payload start, payload end)])."""
    if data[:8] != b"CFTRACE\0":
        fail("not a trace")
    version, hlen = struct.unpack_from("<II", data, 8)
    if version != 2:
        fail("the writer wrote version %d, not 2" % version)
    pos = 16 + hlen + 4
    head_end, chunks = pos, []
    while pos < len(data):
        stored = struct.unpack_from("<I", data, pos + 20)[0]
        chunks.append((pos, pos + 32, pos + 32 + stored))
        pos += 32 + stored
    if pos != len(data) or len(chunks) < 3:
        fail("unexpected layout: %d chunks, ends at %d of %d" % (len(chunks), pos, len(data)))
    return head_end, chunks


def flipped(data, bit):
    b = bytearray(data)
    b[bit // 8] ^= 1 << (bit % 8)
    return bytes(b)


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def bits_to_flip(data, head_end, chunks):
    rnd = random.Random(25)
    bits = list(range(0, 16 * 8))  # magic, version, header length
    bits += rnd.sample(range(16 * 8, (head_end - 4) * 8), 24)  # the header's text
    bits += range((head_end - 4) * 8, head_end * 8)  # its check word
    for i, (start, payload, end) in enumerate(chunks):
        if i == 1:
            bits += range(start * 8, payload * 8)  # every bit of a chunk header
        else:  # a sample of the others' fields and check words
            bits += rnd.sample(range(start * 8, payload * 8), 6)
        bits += rnd.sample(range(payload * 8, end * 8), min(6, (end - payload) * 8))
    return sorted(set(bits))


def damage_cases(data, reference, head_end, chunks):
    bits = bits_to_flip(data, head_end, chunks)
    if len(bits) < 60:
        fail("only %d bits to flip" % len(bits))
    detected = 0
    for bit in bits:
        path = write("flip.cftrace", flipped(data, bit))
        p = run("report", path)
        lines = p.stderr.strip().splitlines()
        if p.returncode == 0 and p.stdout == reference:
            continue
        if p.returncode == 1 and len(lines) == 1 and path in lines[0] and not p.stdout:
            detected += 1
            offset = bit // 8
            in_chunk = [i for i, (s, _, e) in enumerate(chunks) if s <= offset < e]
            if in_chunk:
                s = chunks[in_chunk[0]][0]
                want = "damaged at chunk %d (byte offset %d)" % (in_chunk[0] + 1, s)
                if want not in lines[0]:
                    failures.append("bit %d (byte %d): %r lacks %r" % (bit, offset, lines[0], want))
            continue
        failures.append("bit %d (byte %d): status %d, report %s, stderr %r" % (
            bit, bit // 8, p.returncode, "changed" if p.stdout else "empty", p.stderr[:300]))
    print("%d bits flipped: %d detected, %d left the report as it was"
          % (len(bits), detected, len(bits) - detected))
    if detected < len(bits) // 2:
        failures.append("only %d of %d flips were detected" % (detected, len(bits)))


def other_commands(data, chunks, good):
    start, payload, _ = chunks[1]
    bad = write("bad.cftrace", flipped(data, (payload + 3) * 8))
    for args in (["check", bad, "--max-peak-live", "1T"], ["diff", good, bad],
                 ["merge", good, bad]):
        p = run(*args)
        if p.returncode != 1 or "damaged at chunk 2 (byte offset %d)" % start not in p.stderr:
            failures.append("cudafrag %s on a damaged trace: status %d, %r"
                            % (args[0], p.returncode, p.stderr[:300]))


def truncation_cases(data, chunks):
    start, payload, end = chunks[-2]
    for cut in (start + 5, payload - 1, payload + 1, (payload + end) // 2, end - 1):
        path = write("cut.cftrace", data[:cut])
        p = run("report", path)
        if p.returncode != 0 or "damaged" in p.stderr or \
                "truncated at chunk %d (byte offset %d)" % (len(chunks) - 1, start) \
                not in p.stderr:
            failures.append("cut at %d: status %d, %r" % (cut, p.returncode, p.stderr[:300]))


def main():
    data = make_trace()
    head_end, chunks = layout(data)
    good = write("good.cftrace", data)
    ref = run("report", write("flip.cftrace", data))
    if ref.returncode != 0 or "damaged" in ref.stderr or "truncated" in ref.stderr:
        fail("the intact trace: status %d, %s" % (ref.returncode, ref.stderr))
    damage_cases(data, ref.stdout, head_end, chunks)
    other_commands(data, chunks, good)
    truncation_cases(data, chunks)
    for f in failures[:20]:
        print("FAIL: " + f, file=sys.stderr)
    if failures:
        print("files kept in " + TMP, file=sys.stderr)
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    return 0


sys.exit(main())
