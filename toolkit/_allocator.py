"""Have the memory a big job frees go back to the system, for a process that runs one such job
(``python -m toolkit report --store``).

The report counts every figure in the store's engine, but its incident finder still reads the
window's delivery jobs as rows (`toolkit.report._find_incidents`): hundreds of MB of Arrow and
pandas memory, freed before the engine's next queries. With the default allocators the freed
memory stays with the process (Arrow's mimalloc pool keeps its pages; glibc's heap keeps blocks up
to 32 MB once it has unmapped a large one), under the engine's own: at 2,000,000 notifications
the report peaks at 4.1 GB without this, 3.7 GB with it, in the same time. Arrow's system pool
and a fixed glibc mmap threshold (what ``ARROW_DEFAULT_MEMORY_POOL=system
MALLOC_MMAP_THRESHOLD_=65536`` do before a process starts) give each large block its own mapping,
returned when freed. Dask's workers tune glibc the same way (``MALLOC_TRIM_THRESHOLD_``). Once
the incident finder reads counts, nothing large is freed before the end and this can go.
"""

from __future__ import annotations

import ctypes
import sys

#: Blocks of this size and more get their own mapping (glibc's default starts at 128 KiB and
#: rises to 32 MiB as large blocks are freed).
MMAP_THRESHOLD = 64 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)


def return_freed_memory() -> None:
    """Allocate Arrow memory with the C allocator and, with glibc, give blocks of
    `MMAP_THRESHOLD` and more their own mapping: for the whole process, from now on."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    if sys.platform.startswith("linux"):
        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
        if mallopt is not None:  # glibc (musl has none)
            mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
