"""The draws a checkpoint checks, read from nutpie's trace without building a DataTree.

A checkpoint of :func:`hierbench.bayes._sampler._sampling.sample_to_target` needs the
first ``n`` post-warmup draws of every posterior element as one array.
nutpie's ``inspect()`` converts the whole trace to an ArviZ tree first (every
variable, the warm-up rows, the sampler statistics): 0.3 s per checkpoint at
12 x 500 x 10, and most of a small model's fit (five or six checkpoints of
~0.1 s each against a few milliseconds of sampling). Here the posterior
columns of nutpie's Arrow snapshot are copied straight into that array:
the same numbers in the same order as
:func:`~hierbench.bayes._checks._rankstats.elements` of the converted tree (tested),
so every checkpoint decides as before.

The snapshot is read through nutpie's sampler object (``_sampler``), which is
not public API: where it is missing, :func:`checkpoint_draws` returns None and
the caller converts as nutpie does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["checkpoint_draws"]


def checkpoint_draws(sampler: Any, n: int, skip: frozenset[str] = frozenset()) -> np.ndarray | None:
    """(elements, chains, n): the first ``n`` post-warmup draws of every numeric posterior element.

    ``sampler`` is nutpie's background sampler; None where its Arrow
    snapshot cannot be read (another nutpie), or a chain has fewer draws. ``skip``: variables
    left out besides nutpie's reparameterised names (a model's working parameters).
    """
    import pyarrow as pa

    try:
        draws, stats = sampler._sampler.inspect().get_arrow_trace()
        skip = set(sampler._compiled_model.reparameterized_names) | set(skip)
    except AttributeError:
        return None
    chains = []
    for draw, stat in zip(draws, stats, strict=True):
        warm = int(pa.array(stat.column("tuning")).to_numpy(zero_copy_only=False).sum())
        if draw.num_rows < warm + n:
            return None
        chains.append(_chain_elements(draw, warm, n, skip))
    return np.ascontiguousarray(np.stack(chains, axis=1))


def _chain_elements(draw: Any, start: int, n: int, skip: set[str]) -> np.ndarray:
    """(elements, n) of one chain: rows ``start .. start + n`` of its posterior columns, in column order."""
    import pyarrow as pa

    rows = []
    for name in draw.column_names:
        if name in skip:
            continue
        col = pa.array(draw.column(name)).slice(start, n)
        if col.null_count:
            raise ValueError(f"nutpie's trace has missing draws of {name!r}")
        flat = col.flatten() if hasattr(col, "flatten") else col
        values = flat.to_numpy(zero_copy_only=False)
        if not np.issubdtype(values.dtype, np.number):
            continue
        rows.append(values.reshape(n, -1).T)
    return np.concatenate(rows, axis=0).astype(np.float64)
