"""The memory under :class:`~agcore_lab.rag.vectorstores.InMemoryVectorStore`'s matrix.

Whether a matrix sits on transparent huge pages changes both the cost of filling it (one page
fault per 2 MiB instead of per 4 KiB) and of searching it (TLB misses). Left to numpy and the C
library, that depended on how the matrix came to be: numpy advises a large fresh allocation
``MADV_HUGEPAGE``, but a matrix grown by ``realloc`` lost the advice, so a grown matrix ended
up on small pages and one allocated whole on huge pages, or not, run by run.

So the store gives every matrix of at least :data:`MAPPED_BYTES` the same treatment, on Linux:
an anonymous private mapping of its own, a whole number of huge pages long (so the kernel can
align it to them) and advised ``MADV_HUGEPAGE`` (which the kernel honours when
``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or ``madvise``). Growing it is
``mremap`` (:meth:`mmap.mmap.resize`): the pages move with their page tables, huge pages
included, nothing is copied and the rows beyond the stored ones stay untouched (not resident).
Smaller matrices, and every matrix where such mappings are unavailable (not Linux), stay
plain numpy arrays.
"""

from __future__ import annotations

import mmap
import sys

import numpy as np
from numpy.typing import NDArray

__all__ = ["HUGE_PAGE", "MAPPED", "MAPPED_BYTES", "MappedMatrix"]

HUGE_PAGE = 2 << 20
"""A transparent huge page on x86-64 and arm64 (4 KiB base pages): mappings are whole ones."""
MAPPED_BYTES = 4 << 20
"""Matrices of at least this size get a mapping (numpy's own threshold for huge-page advice);
below it a mapping's first huge page would cost more memory than the matrix."""
MAPPED = (
    sys.platform == "linux"
    and hasattr(mmap, "MAP_PRIVATE")
    and hasattr(mmap, "MADV_HUGEPAGE")
    and hasattr(mmap.mmap, "madvise")
)
"""Whether this platform has such mappings (anonymous, private, resizable, advisable)."""


def _length(nbytes: int) -> int:
    """``nbytes`` rounded up to whole huge pages (at least one)."""
    return max(1, -(-nbytes // HUGE_PAGE)) * HUGE_PAGE


class MappedMatrix:
    """An anonymous mapping holding one C-contiguous float32 matrix from its first byte.

    The mapping is released when the last view of it goes (each view keeps it alive), so views
    handed out stay valid. It cannot move while a view of it exists: :meth:`grow` then says so
    and the caller copies instead.

    Raises:
        OSError: The kernel refused the mapping (out of address space or memory).
    """

    __slots__ = ("_mapping",)

    def __init__(self, rows: int, dim: int) -> None:
        self._mapping = mmap.mmap(
            -1, _length(4 * rows * dim), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        )
        self._advise()

    def __len__(self) -> int:
        """The mapping's length in bytes (whole huge pages)."""
        return len(self._mapping)

    def _advise(self) -> None:
        try:
            self._mapping.madvise(mmap.MADV_HUGEPAGE)
        except OSError:  # a kernel without transparent huge pages: small pages it is
            pass

    def view(self, rows: int, dim: int) -> NDArray[np.float32]:
        """The first ``rows`` rows of ``dim`` as a writable matrix (it must fit)."""
        flat = np.frombuffer(self._mapping, dtype=np.float32, count=rows * dim)
        return flat.reshape(rows, dim)

    def grow(self, rows: int, dim: int) -> bool:
        """Make room for ``rows`` rows of ``dim``, keeping the bytes already there; ``False``
        when the mapping cannot move now (a view of it is still alive, or the kernel refused),
        in which case it is left as it was."""
        needed = 4 * rows * dim
        if needed <= len(self._mapping):
            return True
        try:
            self._mapping.resize(_length(needed))
        except (BufferError, OSError):
            return False
        self._advise()  # the grown part keeps the advice; said again in case a kernel does not
        return True
