#!/usr/bin/env python3
"""torch_oom.py [--cudafrag PATH] [--out DIR]: CUDAFRAG_ON_OOM=report on a real GPU
with PyTorch. Runs itself under `cudafrag run` with CUDAFRAG_ON_OOM=report: the
child holds "weights" (60 % of the free memory, one tensor), then appends 64 MiB
"activations" until torch.cuda.OutOfMemoryError, catches it, frees them and
allocates again. Then checks, and prints, that
  - the child ran to its end (status 0) and recovered;
  - <out>/r.oom.txt and r.oom.json exist, the report written at the failure;
  - the failed request is a driver/runtime allocation of at least 2 MiB;
  - the largest holder at the failure is the weights' Python line;
  - the final report counts the failures and says the program recovered.
Prints "result: ok" when all hold, "result: FAIL" and the reasons otherwise."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHUNK = 64 << 20


def child():
    import torch

    free, total = torch.cuda.mem_get_info()
    print(f"device: {torch.cuda.get_device_name()} free {free >> 20} MiB of {total >> 20} MiB")
    weights_line = sys._getframe().f_lineno + 1
    weights = torch.empty(int(free * 0.6) // 4, dtype=torch.float32, device="cuda")
    acts = []
    failures = 0
    try:
        while True:
            acts.append(torch.empty(CHUNK // 4, dtype=torch.float32, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        failures += 1
    print(f"out of memory after {len(acts)} activations of {CHUNK >> 20} MiB")
    acts.clear()
    torch.cuda.empty_cache()
    again = torch.empty(CHUNK // 4, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    print(f"recovered: allocated {again.numel() * 4 >> 20} MiB again; weights {weights.numel() * 4 >> 20} MiB")
    with open(os.environ["TORCH_OOM_LINE_FILE"], "w", encoding="utf-8") as f:
        f.write(str(weights_line))
    return 0


def python_lines(site):
    return [(os.path.basename(f["file"] or ""), f["line"]) for f in site["frames"] if f["python"]]


def check(out, status):
    bad = []
    if status != 0:
        bad.append(f"the program ended with status {status}")
    oom_txt, oom_json, final = (os.path.join(out, n) for n in ("r.oom.txt", "r.oom.json", "r.json"))
    if not os.path.exists(oom_txt) or not os.path.exists(oom_json):
        return bad + ["no r.oom.txt / r.oom.json"]
    with open(oom_json, encoding="utf-8") as f:
        rep = json.load(f)
    try:
        with open(os.path.join(out, "line"), encoding="utf-8") as f:
            weights_line = int(f.read())
    except (OSError, ValueError):
        weights_line = -1
        bad.append("the program did not get to its end (no line file)")
    oom = rep["oom"]
    req = oom["failed_request"]
    print(f"oom report: kind {rep['kind']}, reason {rep['reason']}, at failure {oom['report_at_failure']}")
    print(f"failed request: {req['api']} of {req['request_bytes'] >> 20} MiB on device {req['device']}, "
          f"free {req['free_bytes'] >> 20} MiB of {req['total_bytes'] >> 20} MiB, at {req['site']['label']}")
    for h in oom["top_holders"]:
        print(f"  holder {h['bytes'] >> 20:8} MiB x{h['count']:<4} {h['site']['label']}  "
              f"python {python_lines(h['site'])[:3]}")
    if rep["reason"] != "out of memory" or not oom["report_at_failure"]:
        bad.append("r.oom.json is not the report written at the failure")
    # A 64 MiB segment, or with expandable segments one of their 2 MiB or larger pages.
    if req["request_bytes"] < (2 << 20):
        bad.append(f"failed request of {req['request_bytes']} bytes, want >= 2 MiB")
    if not oom["top_holders"]:
        bad.append("no holders listed")
    elif ("torch_oom.py", weights_line) not in python_lines(oom["top_holders"][0]["site"]):
        bad.append(f"the largest holder is not torch_oom.py:{weights_line} (the weights)")
    with open(oom_txt, encoding="utf-8") as f:
        text = f.read()
    if "interim report (out of memory)" not in text or "who held the memory" not in text:
        bad.append("r.oom.txt lacks its header or the holders")
    if os.path.exists(final):
        with open(final, encoding="utf-8") as f:
            fin = json.load(f)["oom"]
        print(f"final report: {fin['count']} failures, first at {fin['first_at_s']:.3f} s, "
              f"recovered {fin['recovered']}")
        if fin["count"] < 1 or fin["recovered"] is not True:
            bad.append("the final report does not count the failures or the recovery")
    else:
        bad.append("no final report r.json")
    return bad


def main():
    if os.environ.get("TORCH_OOM_CHILD"):
        return child()
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudafrag", default=shutil.which("cudafrag") or "cudafrag")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="torch-oom-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, TORCH_OOM_CHILD="1", CUDAFRAG_ON_OOM="report", CUDAFRAG_STDERR="0",
               TORCH_OOM_LINE_FILE=os.path.join(out, "line"))
    cmd = [args.cudafrag, "run", "--output", os.path.join(out, "r"), "--",
           sys.executable, os.path.abspath(__file__)]
    print("running:", " ".join(cmd), "| output in", out, flush=True)
    status = subprocess.run(cmd, env=env, check=False).returncode
    bad = check(out, status)
    for b in bad:
        print("problem:", b)
    print("result: ok" if not bad else "result: FAIL")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
