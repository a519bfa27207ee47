#!/usr/bin/env python3
"""The version line of one Python GPU framework, for the GPU scripts' machine
section; exit status 1 when it cannot be imported.

    scripts/framework_versions.py torch        torch VERSION cuda VERSION
    scripts/framework_versions.py torch-nccl   ... nccl VERSION gpus N
    scripts/framework_versions.py torchvision  ... torchvision VERSION
    scripts/framework_versions.py cupy         cupy VERSION
    scripts/framework_versions.py jax          jax VERSION
"""
import argparse
import importlib
import sys


def torch_line(extra):
    import torch

    line = ["torch", torch.__version__, "cuda", torch.version.cuda]
    if extra == "torch-nccl":
        line += ["nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count()]
    if extra == "torchvision":
        import torchvision

        line += ["torchvision", torchvision.__version__]
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("framework", choices=["torch", "torch-nccl", "torchvision", "cupy", "jax"])
    name = p.parse_args().framework
    try:
        if name.startswith("torch"):
            line = torch_line(name)
        else:
            line = [name, importlib.import_module(name).__version__]
    except Exception as e:  # any failure to import is "not importable"
        sys.exit("%s: %s" % (name, e))
    print(*line)


if __name__ == "__main__":
    main()
