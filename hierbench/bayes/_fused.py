"""What the fused likelihood Ops share: the cache salt of a compiled kernel and the JAX route.

The Ops (:mod:`._agq_op`, :mod:`._logit_op`, :mod:`._unit_interval_op`)
each compute a likelihood's value and derivatives in one compiled loop.
PyTensor caches a numba kernel on disk under the Op's props, so each kernel
is salted with the source it is built from (:func:`source_version`): an
edited kernel is never served from a stale cache. Their JAX forms (numpyro
through PyMC) are the NumPy formulas in ``jax.numpy`` (:func:`register_jax`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["register_jax", "source_version"]


def source_version(*parts: Any) -> int:
    """A 48-bit number from the source of ``parts`` (functions, modules) and the repr of anything else."""
    text = "".join(
        inspect.getsource(p) if inspect.isfunction(p) or inspect.ismodule(p) else repr(p) for p in parts
    )
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big")


def register_jax(op_type: type, numpy_form: Callable[..., Any]) -> None:
    """Give ``op_type`` a JAX implementation: ``numpy_form(*inputs, xp=jax.numpy)``.

    Registered only when jax is installed; the gradient graph comes from the
    Op's pullback, as on every other backend.
    """
    if importlib.util.find_spec("jax") is None:
        return
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(op_type)
    def _funcify(op: Any, **kwargs: Any) -> Any:
        def kernel(*inputs: Any) -> Any:
            return numpy_form(*inputs, xp=jnp)

        return kernel
