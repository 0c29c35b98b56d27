"""Blocked scaled dot-product attention: the plain path's numbers with less memory traffic.

The plain path (``core._attention_plain``) builds the whole score matrix, then
the softmax makes several full passes over it (scale, mask, max, subtract,
exp, sum, divide), each one a trip through main memory once ``n_q * n_k`` no
longer fits in cache, and each temporary a fresh ``n_q x n_k`` array. The
kernels here do the same arithmetic on one block of query rows at a time, in
place, so a block is computed, normalised and multiplied by V while it is
still in cache, and float32 stays float32. The row sums come out of the
``@ V`` matmul itself (V gets a column of ones), which saves one pass:

* :func:`attend_rows` (``need_weights=True``): each block of query rows gets
  its scores ``[block_q, n_k]`` written straight into its rows of the weights
  array, softmaxed there, then multiplied by V.
* :func:`attend_online` (``need_weights=False``): query blocks times key
  blocks, with the online softmax (a running row max and row sum, the
  partial output rescaled when the max grows). It never holds more than one
  ``[block_q, block_k]`` tile of scores per worker, so ``n = 16384`` needs a
  few MiB beyond q, k, v, the output and a copy of v, instead of the 1 GiB
  ``n x n`` matrix. When the scores are provably bounded (the usual case) it
  skips the row max altogether: ``exp`` of the raw scores cannot overflow, so a
  tile is just matmul, ``exp``, matmul (see :func:`attend_online`).

Both are exact: no approximation, only a different order of the same
float operations (results agree with the plain path to rounding, about 1e-7
relative in float32). The semantics are the plain path's: boolean masks
(``True`` = may attend) and float masks broadcast to ``[..., n_q, n_k]``,
``is_causal`` aligned to the upper-left corner (also for ``n_q != n_k``; the
keys after a block's last query are skipped), any ``scale``, leading
batch/head axes that broadcast, and a fully masked query row gives zero
weights and a zero output, never NaN.

Blocks are independent, so they can be shared among worker threads (NumPy
releases the GIL inside matmul and ufunc loops). That pays only when the
BLAS itself is single-threaded; see :func:`default_threads`.

Sources: Vaswani et al. (2017), "Attention Is All You Need", section 3.2.1;
Milakov & Gimelshein (2018), "Online normalizer calculation for softmax";
Dao et al. (2022), "FlashAttention: Fast and Memory-Efficient Exact Attention
with IO-Awareness", algorithm 1 (the online softmax over key blocks).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ._validate import prepare_attention, scores_may_overflow, scores_overflow_error

__all__ = ["blocked_attention", "attend_rows", "attend_online", "default_threads", "BLOCK_BYTES"]

BLOCK_BYTES = 2 * 2**20
"""Target size of one block (tile) of scores. Measured on a 2-core EPYC (1 MiB L2 per core, 32 MiB L3):
0.5-4 MiB blocks are about equally fast per element; larger ones mean fewer Python-level steps."""


def _block_rows(n_cols: int, itemsize: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Rows per block so that ``rows * n_cols * itemsize`` is about ``block_bytes`` (8..1024, a multiple of 8)."""
    rows = block_bytes // max(1, n_cols * itemsize)
    return int(min(1024, max(8, rows // 8 * 8)))


# ---------------------------------------------------------------------------------------------
# threads: one worker per core, each matmul on one BLAS thread

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MAX_THREADS = 8
"""Upper limit of :func:`default_threads` (measured on 2 cores only; beyond a few workers the GIL
hand-offs between NumPy calls add up)."""


@functools.cache
def _openblas_thread_functions() -> tuple[Callable, Callable] | None:
    """``(get_num_threads, set_num_threads)`` of the OpenBLAS NumPy loaded, or ``None``.

    Looked up among the libraries mapped into this process (Linux ``/proc/self/maps``), with the
    symbol names of NumPy's own wheels (``scipy_openblas_*64_``) and of a plain OpenBLAS.
    """
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux
        return None
    paths = sorted({fields[5] for fields in (line.split(maxsplit=5) for line in maps.splitlines())
                    if len(fields) == 6 and "openblas" in fields[5].rsplit("/", 1)[-1].lower()})
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, get.argtypes = ctypes.c_int, []
                    put.restype, put.argtypes = None, [ctypes.c_int]
                    return get, put
    return None


class _OneBlasThread:
    """Context: NumPy's OpenBLAS on one thread while any blocked call with workers runs.

    Several workers each calling a multi-threaded BLAS make the BLAS threads wait and spin
    for each other (measured: slower than a single worker); with the BLAS on one thread, each
    worker's matmuls run on its own core and the softmax passes run in parallel too. The BLAS
    thread count is process-wide: while such a call runs, matmuls in other threads run on one
    thread as well. Nested and concurrent calls are counted; the last one out restores the
    previous count. Without a reachable OpenBLAS this does nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 1

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        functions = _openblas_thread_functions()
        if functions is None:
            yield
            return
        get, put = functions
        with self._lock:
            if self._users == 0:
                self._saved = get()
                put(1)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    put(self._saved)


    def set_threads(self, n: int) -> bool:
        """Set the process's OpenBLAS thread count to ``n`` (outside a blocked call at once; during one, from
        when the last one ends). ``False`` when no OpenBLAS is reachable."""
        functions = _openblas_thread_functions()
        if functions is None:
            return False
        with self._lock:
            if self._users == 0:
                functions[1](n)
            else:
                self._saved = n
        return True


_one_blas_thread = _OneBlasThread()


def blas_threads() -> int | None:
    """The thread count of the OpenBLAS NumPy loaded (process-wide), or ``None`` when it is not reachable."""
    functions = _openblas_thread_functions()
    return None if functions is None else int(functions[0]())


def set_blas_threads(n: int) -> bool:
    """Run every later BLAS call of the process (NumPy's OpenBLAS: one setting per process) on ``n`` threads.

    The app's server sets 1 (``explorer/shell/blas.py``: beside a busy core, a multi-threaded matmul waits for its
    threads). A blocked call running meanwhile keeps its one thread and leaves ``n`` when it ends.

    Returns:
        ``True`` if set; ``False`` when NumPy's BLAS is not an OpenBLAS this module can reach (nothing changes).

    Raises:
        ValueError: ``n`` is not a whole number of at least 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a whole number of threads, at least 1, got {n!r}")
    return _one_blas_thread.set_threads(n)


def default_threads() -> int:
    """Worker threads for the blocked path: one per core (at most :data:`MAX_THREADS`), or 1.

    Workers pay only when each matmul runs on one BLAS thread: when the environment pins the
    BLAS to one thread (``OPENBLAS_NUM_THREADS=1`` or the like), or when the blocked path can pin
    NumPy's OpenBLAS itself for the duration of the call (see :class:`_OneBlasThread`). Then two
    workers on 2 cores are about 20-25 % faster than one worker with a 2-thread BLAS (n = 2048,
    8 heads, float32). Otherwise 1: the BLAS alone spreads each matmul over the cores.
    """
    cores = min(os.cpu_count() or 1, MAX_THREADS)
    pinned = any(os.environ.get(name) == "1" for name in BLAS_THREAD_VARIABLES)
    return cores if pinned or _openblas_thread_functions() is not None else 1


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _shared_pool() -> ThreadPoolExecutor:
    """The process's worker threads for the blocked path, started on first use and kept (idle threads wait
    on a queue and use no CPU): starting threads on every call cost about 0.1 ms per call."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS - 1, thread_name_prefix="attention-blocked")
        return _pool


def _run(tasks: Sequence, work: Callable, n_threads: int) -> None:
    """Call ``work(task)`` for every task, on ``n_threads`` threads pulling from one shared queue.

    The calling thread is one of them; the others come from a shared pool. The caller alone can drain the
    queue, so concurrent calls never wait for each other's workers. With more than one thread, NumPy's
    OpenBLAS runs on one thread meanwhile (:class:`_OneBlasThread`). A worker's exception is re-raised
    after every worker has stopped.
    """
    n_threads = min(n_threads, len(tasks), MAX_THREADS)
    if n_threads <= 1:
        for task in tasks:
            work(task)
        return
    pending = iter(tasks)
    lock = threading.Lock()
    failed: list[BaseException] = []

    def worker() -> None:
        while not failed:
            with lock:
                task = next(pending, None)
            if task is None:
                return
            try:
                work(task)
            except BaseException as exc:  # noqa: BLE001 - re-raised by the caller below
                failed.append(exc)

    with _one_blas_thread():
        futures = [_shared_pool().submit(worker) for _ in range(n_threads - 1)]
        worker()
        for future in futures:
            future.result()
    if failed:
        raise failed[0]


# ---------------------------------------------------------------------------------------------
# blocks


def _broadcast(q, k, v, bool_mask, float_mask, *, ones: bool = True):
    """Broadcast the leading axes of everything to ``batch``.

    Returns:
        views ``q [*batch, n_q, d_k]``, ``k [*batch, n_k, d_k]``, masks ``[*batch, n_q, n_k]``
        (or ``None``), and ``v1 [*batch, n_k, d_v + 1]``: a copy of ``v`` (before broadcasting)
        with a column of ones appended, so that ``exp(s) @ v1`` also gives the row sums
        (``ones=False``: a view of ``v [*batch, n_k, d_v]`` instead).
    """
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, n_k = q.shape[-2], k.shape[-2]
    if bool_mask is not None:
        batch = np.broadcast_shapes(batch, np.shape(bool_mask)[:-2])
    if float_mask is not None:
        batch = np.broadcast_shapes(batch, np.shape(float_mask)[:-2])
    v1 = np.concatenate([v, np.ones((*v.shape[:-1], 1), v.dtype)], axis=-1) if ones else v  # [..., n_k, d_v + 1]
    q, k, v1 = (np.broadcast_to(a, (*batch, *a.shape[-2:])) for a in (q, k, v1))
    bool_mask, float_mask = (None if m is None else np.broadcast_to(m, (*batch, n_q, n_k))
                             for m in (bool_mask, float_mask))
    return q, k, v1, bool_mask, float_mask


def _tasks(batch, n_q: int, block_q: int, is_causal: bool) -> list:
    """One task per (batch index, block of query rows): ``(idx, r0, r1)``.

    Causal blocks get costlier row by row, so the last rows go first (the workers then finish together).
    """
    starts = range(0, n_q, block_q)
    return [(idx, r0, min(r0 + block_q, n_q)) for r0 in (reversed(starts) if is_causal else starts)
            for idx in np.ndindex(*batch)]


def _exact_on_queries(scale: float) -> bool:
    """Whether ``scale`` is a power of two (as ``1/sqrt(64)``), so it can multiply the queries instead of the scores.

    ``(q * 2**e) @ kᵀ == (q @ kᵀ) * 2**e`` bit for bit, and a block of queries ``[b, d_k]`` is
    much smaller than its scores ``[b, n_k]``: one pass over the scores less.
    """
    return abs(math.frexp(scale)[0]) == 0.5


def _reciprocal(total: np.ndarray) -> np.ndarray:
    """``1 / total``, and 0 where ``total`` is 0 (a fully masked row)."""
    return np.divide(1, total, out=np.zeros_like(total), where=total > 0)


def _check_row_max(row_max: np.ndarray, q: np.ndarray, k: np.ndarray) -> None:
    """Raise if a row maximum is NaN or +inf (scores that overflowed the float type)."""
    if not (row_max < np.inf).all():  # -inf (a fully masked row) is fine; NaN and +inf are not
        raise scores_overflow_error(q, k)


def _mask_block(s, bool_mask, float_mask, causal_offset: int | None) -> None:
    """Mask a block of scaled scores in place: add the float mask, then set blocked cells to ``-inf``.

    Args:
        s: scores ``[b, c]`` (modified).
        bool_mask: boolean ``[b, c]`` (``True`` = may attend) or ``None``.
        float_mask: float ``[b, c]`` added to the scores, or ``None``.
        causal_offset: for ``is_causal``, global index of the block's first query minus that of its
            first key (cell ``(a, j)`` is blocked when ``j > a + offset``); ``None`` otherwise.
    """
    if float_mask is not None:
        with np.errstate(over="ignore"):  # +inf from an overflow is reported by the row-max check
            s += float_mask
    if bool_mask is not None:
        np.copyto(s, -np.inf, where=~bool_mask)
    if causal_offset is not None and s.shape[1] - 1 > causal_offset:  # some cell lies above the diagonal
        np.copyto(s, -np.inf, where=~np.tri(*s.shape, k=causal_offset, dtype=bool))


def attend_rows(q, k, v, bool_mask=None, float_mask=None, *, is_causal: bool = False, scale: float,
                block_q: int | None = None, n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Attention with weights, one block of query rows at a time, in place.

    Inputs are validated and share one float dtype (``_validate.prepare_attention`` does this;
    use :func:`blocked_attention` for raw input).

    Args:
        q: ``[..., n_q, d_k]``; k: ``[..., n_k, d_k]``; v: ``[..., n_k, d_v]``; the
            leading axes broadcast to ``batch`` (q and k as views; v is copied once, with a
            column of ones appended).
        bool_mask: boolean mask broadcastable to ``[*batch, n_q, n_k]`` (``True`` = may attend), or ``None``.
        float_mask: float mask broadcastable to ``[*batch, n_q, n_k]``, added to the scaled scores, or ``None``.
        is_causal: query i attends to keys ``j <= i`` (upper-left aligned).
        scale: multiplier on the scores.
        block_q: query rows per block; default: about :data:`BLOCK_BYTES` of scores.
        n_threads: worker threads sharing the blocks (see :func:`blocked_attention`).

    Returns:
        ``(output [*batch, n_q, d_v], weights [*batch, n_q, n_k])`` in the inputs' dtype;
        a fully masked row has zero weights and a zero output.

    Raises:
        ValueError: the scores overflow the float type (huge float32 inputs;
            :func:`~attention._validate.scores_overflow_error`, the plain path's message).

    Source: Vaswani et al. (2017) section 3.2.1, eq. (1), evaluated block by block.
    """
    q, k, v1, bool_mask, float_mask = _broadcast(q, k, v, bool_mask, float_mask)
    *batch, n_q, _ = q.shape
    n_k, d_v = v1.shape[-2], v1.shape[-1] - 1
    dtype = q.dtype
    check = scores_may_overflow(q, k, scale, float_mask)  # cheap bound; per-block cell checks only when it fails
    on_queries = _exact_on_queries(scale)
    scale = dtype.type(scale)
    weights = np.empty((*batch, n_q, n_k), dtype)  # [*batch, n_q, n_k], each row written once
    output = np.empty((*batch, n_q, d_v), dtype)  # [*batch, n_q, d_v]
    block_q = min(block_q or _block_rows(n_k, dtype.itemsize), n_q)

    def work(task) -> None:
        idx, r0, r1 = task
        W = weights[idx][r0:r1]  # [b, n_k], this block's rows of the weights
        c = min(n_k, r1) if is_causal else n_k  # causal: keys >= r1 are hidden from every row here
        s = W[:, :c]  # [b, c]
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported just below, in words
            qb = q[idx][r0:r1] * scale if on_queries else q[idx][r0:r1]  # [b, d_k]
            np.matmul(qb, k[idx][:c].T, out=s)  # [b, d_k] x [d_k, c] -> [b, c]
            if not on_queries:
                s *= scale
        if check and not np.isfinite(s).all():
            raise scores_overflow_error(q, k)
        _mask_block(s, None if bool_mask is None else bool_mask[idx][r0:r1, :c],
                    None if float_mask is None else float_mask[idx][r0:r1, :c], r0 if is_causal else None)
        # softmax in place (lesson step 5): subtract the row max, exp, divide by the row sum
        row_max = s.max(axis=1, keepdims=True)  # [b, 1]
        _check_row_max(row_max, q, k)
        row_max[np.isneginf(row_max)] = 0  # fully masked row: exp(-inf - 0) = 0
        s -= row_max
        np.exp(s, out=s)
        out1 = s @ v1[idx][:c]  # [b, c] x [c, d_v + 1] -> [b, d_v + 1]: unnormalised output | row sum
        inv_total = _reciprocal(out1[:, d_v:])  # [b, 1], 0 for a fully masked row
        s *= inv_total
        W[:, c:] = 0
        np.multiply(out1[:, :d_v], inv_total, out=output[idx][r0:r1])

    _run(_tasks(batch, n_q, block_q, is_causal), work, n_threads)
    return output, weights


TILE_CELLS = 1 << 18
"""Score cells per tile of the unshifted online path (1 MiB in float32): measured on a 2-core EPYC, tiles of
``[512 queries, 512 keys]`` keep OpenBLAS's ``[b, 64] x [64, c]`` matmuls near their best rate (about 90 GFLOP/s
per core, against 65-75 with 1024-2048 keys per tile)."""

KEY_BLOCK = 512
"""Keys per tile of the unshifted online path (see :data:`TILE_CELLS`)."""


def _no_shift_needed(q, k, v, float_mask, scale: float) -> bool:
    """Whether ``exp`` of every score can be taken as it is, without subtracting the row max first.

    True when every scaled score (plus the float mask) lies within ``±log(finfo.max) / 2`` (±44 for
    float32, ±354 for float64): by Cauchy-Schwarz ``|q_i · k_j| <= |q_i| |k_j|``, so the bound is
    ``|scale| max_i |q_i| max_j |k_j| + max |finite mask|``, one pass over q, k (and the mask). Then
    ``exp`` neither overflows nor leaves the normal range (``exp(-44)`` is about 1e-19, far above
    float32's smallest normal 1.2e-38), and the sums ``exp(s) @ [v | 1]`` stay below ``finfo.max / 4``
    (checked with ``max |v|`` and ``n_k``). Softmax does not change when every score of a row moves by
    the same amount, so ``exp(s) / sum(exp(s))`` is the same softmax to rounding.
    """
    limit = math.log(float(np.finfo(q.dtype).max)) / 2
    with np.errstate(over="ignore"):  # an overflowing norm is +inf: no
        q_sq = float(np.einsum("...i,...i->...", q, q).max())  # max |q_i|², in q's dtype (rounding: see below)
        k_sq = float(np.einsum("...i,...i->...", k, k).max())
    bound = abs(scale) * math.sqrt(q_sq * k_sq) * 1.001  # 1.001 covers the rounding of the sums of squares
    if float_mask is not None:
        finite = np.abs(float_mask[np.isfinite(float_mask)])
        bound += float(finite.max()) if finite.size else 0.0
    if not bound <= limit:
        return False
    v_max = max(1.0, float(v.max()), -float(v.min()))
    return math.exp(bound) * k.shape[-2] * v_max < float(np.finfo(q.dtype).max) / 4


def _flat(arrays: Sequence[np.ndarray | None], size: int) -> list[np.ndarray | None] | None:
    """``[*batch, a, b] -> [size, a, b]`` views of every array (``None`` stays ``None``), or ``None`` if one
    of them would need a copy (leading axes broadcast in a way no single stride describes)."""
    flat = []
    for a in arrays:
        if a is None:
            flat.append(None)
            continue
        try:
            flat.append(np.reshape(a, (size, *a.shape[-2:]), copy=False))
        except ValueError:
            return None
    return flat


_scratch = threading.local()


def _scratch_arrays(dtype: np.dtype, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    """Arrays of these shapes in one buffer kept by the calling thread across calls (contents undefined).

    Fresh arrays of a few MiB cost page faults on every call (the allocator hands large blocks back to
    the system when they are freed): about 1.5 ms per call at n = 512, 8 heads, measured. The buffer is
    kept only up to ``2 * TILE_CELLS`` elements (2 MiB in float32 per thread); larger requests (block
    sizes given by hand) get a temporary one.
    """
    sizes = [math.prod(shape) for shape in shapes]
    total = sum(sizes)
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or buffer.dtype != dtype or buffer.size < total:
        buffer = np.empty(total, dtype)
        if total <= 2 * TILE_CELLS:
            _scratch.buffer = buffer
    arrays, start = [], 0
    for shape, size in zip(shapes, sizes, strict=True):
        arrays.append(buffer[start:start + size].reshape(shape))
        start += size
    return arrays


def _attend_unshifted(q, k, v, bool_mask, float_mask, output, *, is_causal: bool, scale: float,
                      block_q: int | None, block_k: int | None, n_threads: int) -> None:
    """The online path when :func:`_no_shift_needed`: ``output = (exp(s) @ v) / (exp(s) @ 1)``, into ``output``.

    No row max, no subtraction and no rescaling of the partial sums: per tile one matmul, one ``exp`` in
    place (masked cells set to ``-inf`` first, so they give 0) and one matmul with the tile's values and a
    column of ones (copied into a ``[c, d_v + 1]`` scratch block) accumulating the unnormalised output and
    the row sums. Several heads share a tile (batched matmul over the leading axis) when ``n_q x n_k`` is
    small. Arguments are broadcast views ``[*batch, ...]`` and the output array; the scratch arrays are kept
    per thread (:func:`_scratch_arrays`).
    """
    *batch, n_q, d_k = q.shape
    n_k, d_v = v.shape[-2], v.shape[-1]
    dtype = q.dtype
    size = math.prod(batch)
    block_k = min(block_k or KEY_BLOCK, n_k)
    block_q = min(block_q or max(8, TILE_CELLS // block_k // 8 * 8), n_q)
    flat = _flat((q, k, v, bool_mask, float_mask, output), size)
    if flat is None:  # one batch item per group: [1, n, d] views
        groups = [tuple(None if a is None else a[idx][None] for a in (q, k, v, bool_mask, float_mask, output))
                  for idx in np.ndindex(*batch)]
        heads = 1
    else:
        n_row_blocks = -(-n_q // block_q)
        heads = max(1, min(TILE_CELLS // (block_q * block_k), -(-size * n_row_blocks // n_threads) // n_row_blocks))
        heads = -(-size // -(-size // heads))  # the same number of heads in every group
        groups = [tuple(None if a is None else a[g0:g0 + heads] for a in flat) for g0 in range(0, size, heads)]
    starts = range(0, n_q, block_q)
    tasks = [(group, r0, min(r0 + block_q, n_q)) for r0 in (reversed(starts) if is_causal else starts)
             for group in groups]
    on_queries = _exact_on_queries(scale)
    scale = dtype.type(scale)

    def work(task) -> None:
        (qg, kg, vg, bg, fg, og), r0, r1 = task
        g, b = qg.shape[0], r1 - r0
        tile, v1, acc, part, qs = _scratch_arrays(
            dtype, (heads * block_q * block_k,), (heads * block_k * (d_v + 1),), (g, b, d_v + 1), (g, b, d_v + 1),
            (g, b, d_k) if on_queries else (0,))
        qb = np.multiply(qg[:, r0:r1], scale, out=qs) if on_queries else qg[:, r0:r1]  # [g, b, d_k]
        n_keys = min(n_k, r1) if is_causal else n_k  # causal: keys >= r1 are hidden from every row here
        for c0 in range(0, n_keys, block_k):
            c1 = min(c0 + block_k, n_keys)
            c = c1 - c0
            s = tile[: g * b * c].reshape(g, b, c)  # [g, b, c] contiguous view of the scratch
            np.matmul(qb, kg[:, c0:c1].swapaxes(-1, -2), out=s)  # [g, b, d_k] x [g, d_k, c] -> [g, b, c]
            if not on_queries:
                s *= scale
            if fg is not None:
                s += fg[:, r0:r1, c0:c1]
            if bg is not None:
                np.copyto(s, -np.inf, where=~bg[:, r0:r1, c0:c1])
            if is_causal and c1 - 1 > r0:  # some cell lies above the diagonal (key j > query i)
                np.copyto(s, -np.inf, where=~np.tri(b, c, k=r0 - c0, dtype=bool))
            np.exp(s, out=s)  # |s| <= log(finfo.max) / 2: no overflow, no underflow; -inf gives 0
            vb = v1[: g * c * (d_v + 1)].reshape(g, c, d_v + 1)  # [g, c, d_v + 1]: the values | 1
            vb[..., :d_v] = vg[:, c0:c1]
            vb[..., d_v] = 1
            np.matmul(s, vb, out=acc if c0 == 0 else part)  # [g, b, c] x [g, c, d_v + 1] -> [g, b, d_v + 1]
            if c0:
                acc += part
        np.multiply(acc[..., :d_v], _reciprocal(acc[..., d_v:]), out=og[:, r0:r1])

    _run(tasks, work, n_threads)


def attend_online(q, k, v, bool_mask=None, float_mask=None, *, is_causal: bool = False, scale: float,
                  block_q: int | None = None, block_k: int | None = None, n_threads: int = 1) -> np.ndarray:
    """Attention output only, by the online softmax over key blocks; never holds ``n_q x n_k``.

    For each block of query rows the key blocks are visited in order, keeping
    per row the running max ``m``, and the unnormalised output and row sum of
    ``exp(s - m)`` (``acc``); when the max grows, ``acc`` is multiplied by
    ``exp(m_old - m_new)``. At the end ``output = acc / row sum``. With one key
    block (``block_k >= n_k``) this is the plain softmax.

    When every scaled score (plus the float mask) is bounded within
    ``±log(finfo.max) / 2`` (:func:`_no_shift_needed`: Cauchy-Schwarz on the row
    norms of q and k; e.g. any ``randn`` input with ``d_k = 64`` and the default
    scale), the max is not needed: ``exp`` of the scores can neither overflow
    nor underflow, and softmax is unchanged by a shift, so each tile is one
    matmul, one ``exp`` in place and one matmul into ``acc``, with no row max,
    subtraction or rescaling, and several heads share a tile when ``n_q x n_k``
    is small (:func:`_attend_unshifted`). Same numbers to rounding.

    Inputs are validated and share one float dtype (see :func:`attend_rows`).

    Args:
        q, k, v, bool_mask, float_mask, is_causal, scale: as :func:`attend_rows`.
        block_q: query rows per block; default ``min(n_q, 512)`` (bounded scores: about
            :data:`TILE_CELLS` / ``block_k``).
        block_k: keys per block; default: about :data:`BLOCK_BYTES` of scores per tile
            (bounded scores: :data:`KEY_BLOCK`).
        n_threads: worker threads sharing the query blocks (see :func:`blocked_attention`).

    Returns:
        output ``[*batch, n_q, d_v]`` in the inputs' dtype; a fully masked row gives zeros.
        Extra memory: ``v`` with a column of ones appended, and per worker one
        ``[block_q, block_k]`` tile of scores (one mask tile more with a mask; with bounded
        scores and small ``n_q x n_k``, one tile of several heads, at most :data:`TILE_CELLS`
        cells) and a ``[block_q, d_v + 1]`` accumulator.

    Raises:
        ValueError: the scores overflow the float type (huge float32 inputs;
            :func:`~attention._validate.scores_overflow_error`, the plain path's message).

    Source: Milakov & Gimelshein (2018); Dao et al. (2022) algorithm 1.
    """
    if _no_shift_needed(q, k, v, float_mask, scale):
        q, k, v, bool_mask, float_mask = _broadcast(q, k, v, bool_mask, float_mask, ones=False)
        output = np.empty((*q.shape[:-1], v.shape[-1]), q.dtype)  # [*batch, n_q, d_v]
        _attend_unshifted(q, k, v, bool_mask, float_mask, output, is_causal=is_causal, scale=scale,
                          block_q=block_q, block_k=block_k, n_threads=n_threads)
        return output
    q, k, v1, bool_mask, float_mask = _broadcast(q, k, v, bool_mask, float_mask)
    *batch, n_q, _ = q.shape
    n_k, d_v = v1.shape[-2], v1.shape[-1] - 1
    dtype = q.dtype
    output = np.empty((*batch, n_q, d_v), dtype)  # [*batch, n_q, d_v]
    check = scores_may_overflow(q, k, scale, float_mask)  # cheap bound; per-tile cell checks only when it fails
    on_queries = _exact_on_queries(scale)
    scale = dtype.type(scale)
    block_q = min(block_q or 512, n_q)
    block_k = min(block_k or _block_rows(block_q, dtype.itemsize), n_k)
    local = threading.local()

    def work(task) -> None:
        idx, r0, r1 = task
        b = r1 - r0
        if not hasattr(local, "tile"):
            local.tile = np.empty(block_q * block_k, dtype)  # this worker's scratch for one tile of scores
        with np.errstate(over="ignore"):  # an overflow is reported below, in words
            qb = q[idx][r0:r1] * scale if on_queries else q[idx][r0:r1]  # [b, d_k]
        m = np.full((b, 1), -np.inf, dtype)  # running row max
        acc = np.zeros((b, d_v + 1), dtype)  # running unnormalised output | row sum of exp(s - m)
        n_keys = min(n_k, r1) if is_causal else n_k  # causal: keys >= r1 are hidden from every row here
        for c0 in range(0, n_keys, block_k):
            c1 = min(c0 + block_k, n_keys)
            s = local.tile[: b * (c1 - c0)].reshape(b, c1 - c0)  # [b, c] contiguous view of the scratch
            with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported just below, in words
                np.matmul(qb, k[idx][c0:c1].T, out=s)  # [b, d_k] x [d_k, c] -> [b, c]
                if not on_queries:
                    s *= scale
            if check and not np.isfinite(s).all():
                raise scores_overflow_error(q, k)
            _mask_block(s, None if bool_mask is None else bool_mask[idx][r0:r1, c0:c1],
                        None if float_mask is None else float_mask[idx][r0:r1, c0:c1],
                        r0 - c0 if is_causal else None)
            m_new = s.max(axis=1, keepdims=True)  # [b, 1]
            _check_row_max(m_new, q, k)
            np.maximum(m_new, m, out=m_new)
            m_safe = np.where(np.isneginf(m_new), dtype.type(0), m_new)  # -inf only if all masked so far
            s -= m_safe
            np.exp(s, out=s)  # masked cells: exp(-inf) = 0
            acc *= np.exp(m - m_safe)  # rescale to the new max; 0 on the first visited block
            acc += s @ v1[idx][c0:c1]  # [b, c] x [c, d_v + 1] -> [b, d_v + 1]
            m = m_new
        np.multiply(acc[:, :d_v], _reciprocal(acc[:, d_v:]), out=output[idx][r0:r1])

    _run(_tasks(batch, n_q, block_q, is_causal), work, n_threads)
    return output


def blocked_attention(q, k, v, attn_mask=None, *, is_causal: bool = False, scale: float | None = None,
                      need_weights: bool = True, block_q: int | None = None, block_k: int | None = None,
                      n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`attention.scaled_dot_product_attention` forced onto the blocked path, with its knobs.

    ``scaled_dot_product_attention`` picks this path by itself for large inputs;
    call this directly to force it at any size or to choose the block sizes.

    Args:
        q, k, v, attn_mask, is_causal, scale: as ``scaled_dot_product_attention``.
        need_weights: ``True``: :func:`attend_rows`, returns the weights.
            ``False``: :func:`attend_online`, returns ``(output, None)`` and never
            holds the ``[..., n_q, n_k]`` weights.
        block_q, block_k: block sizes (``block_k`` only with ``need_weights=False``);
            default: sized for the cache.
        n_threads: worker threads sharing the blocks; default :func:`default_threads`
            (1 unless the BLAS is pinned to one thread).

    Returns:
        ``(output [..., n_q, d_v], weights [..., n_q, n_k] or None)``, equal to the
        plain path to rounding.

    Raises:
        ValueError: as ``scaled_dot_product_attention``, or a block size / thread
            count that is not a positive integer.
    """
    for name, value in (("block_q", block_q), ("block_k", block_k), ("n_threads", n_threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    q, k, v, bool_mask, float_mask, scale = prepare_attention(q, k, v, attn_mask, is_causal, scale)
    threads = default_threads() if n_threads is None else int(n_threads)
    if need_weights:
        return attend_rows(q, k, v, bool_mask, float_mask, is_causal=is_causal, scale=scale, block_q=block_q,
                           n_threads=threads)
    out = attend_online(q, k, v, bool_mask, float_mask, is_causal=is_causal, scale=scale, block_q=block_q,
                        block_k=block_k, n_threads=threads)
    return out, None
