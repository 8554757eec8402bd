"""mpirep._core.stream_copy, the copy with stores that bypass the cache that the benchmarks'
bound times beside np.copyto: every byte lands, at any alignment and length, and misuse is
refused rather than copied short."""

import numpy as np
import pytest

from mpirep._core_loader import core


@pytest.mark.parametrize("offset", [0, 1, 3, 16])
@pytest.mark.parametrize("length", [0, 1, 15, 64, 65, 4099, (1 << 20) + 7])
def test_copies_every_byte_at_any_alignment(offset, length):
    source = (np.arange(length + offset, dtype=np.int64) * 7 % 251).astype(np.uint8)
    destination = np.full(length + offset + 1, 255, dtype=np.uint8)
    core().stream_copy(destination[offset:offset + length], source[offset:])
    assert np.array_equal(destination[offset:offset + length], source[offset:])
    assert (destination[:offset] == 255).all() and destination[-1] == 255


def test_a_length_mismatch_is_refused():
    with pytest.raises(ValueError, match="dst has 8 bytes and src 12"):
        core().stream_copy(np.zeros(2, np.float32), np.ones(3, np.float32))


def test_a_read_only_or_strided_destination_is_refused():
    source = np.ones(4, np.float32)
    read_only = np.zeros(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):
        core().stream_copy(read_only, source)
    with pytest.raises((BufferError, ValueError)):
        core().stream_copy(np.zeros(8, np.float32)[::2], source)
