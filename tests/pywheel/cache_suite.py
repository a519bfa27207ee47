"""The suite plugin.sh runs to see a framework's cache emptied between tests: the
first test leaves 100 MiB cached in the stand-in torch (fake_torch.py); the
second, limited to 64 MiB, takes 32 MiB. It passes when the cache was emptied
before it and fails with --cudafrag-keep-cache, charged with 132 MiB."""
import pytest
import torch  # the stand-in, next to this file

MIB = 1 << 20


def test_fills_cache():
    torch.cuda.cache(100 * MIB)


@pytest.mark.cudafrag(max_peak_live="64M")
def test_after_cache():
    torch.cuda.cache(32 * MIB)
