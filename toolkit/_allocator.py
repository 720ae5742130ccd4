"""Have the memory a big job frees go back to the system, for a process that runs one such job
(``python -m toolkit report --store``).

A report over a large store computes its delivery jobs a day at a time: each day allocates and
frees tens of MB while the days' results stay. With the default allocators the freed memory stays
with the process, pinned around the results (Arrow's mimalloc pool keeps its pages; glibc's heap
keeps blocks up to 32 MB once it has unmapped a large one): about 0.75 GB more peak memory at 2
million notifications. Arrow's system pool and a fixed glibc mmap threshold (what
``ARROW_DEFAULT_MEMORY_POOL=system MALLOC_MMAP_THRESHOLD_=65536`` do before a process starts)
give each large block its own mapping, returned when freed. The price: about 20% more time, as
fresh mappings are faulted in. Dask's workers tune glibc the same way (``MALLOC_TRIM_THRESHOLD_``).
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
