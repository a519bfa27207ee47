"""The lines every PyTorch workload of tests/gpu prints when its loop ends, which
scripts/arena_table.py and the GPU check scripts read: its output key (final loss
or checksum), the loop's time, PyTorch's peak allocated and reserved bytes, and
what ran."""
import torch


def print_run(key_line, elapsed, describe):
    print(key_line)
    print(f"elapsed {elapsed:.3f} s")
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")
    print(f"max_memory_reserved {torch.cuda.max_memory_reserved()}")
    print(describe)
