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
import importlib.abc
import importlib.util
import inspect
import sys
from collections.abc import Callable
from typing import Any
from typing import ClassVar

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

__all__ = ["FusedVectorOp", "register_jax", "source_version"]


class FusedVectorOp(Op):
    """A per-element log density and its first derivatives, one vector each, from vector inputs.

    A subclass names its inputs (``inputs``: data first, then the
    ``n_data`` inputs' differentiable followers), what an element is
    (``unit``, for messages) and its NumPy formulas (``numpy_form``,
    returning the log density and one derivative per differentiable input).
    The outputs after the first exist for the gradient and have none of their own.
    """

    __props__ = ()
    inputs: ClassVar[tuple[str, ...]] = ()
    n_data: ClassVar[int] = 0
    unit: ClassVar[str] = "cell"
    numpy_form: ClassVar[Callable[..., tuple]]

    def make_node(self, *args: Any) -> Apply:
        xs = [pt.as_tensor_variable(v).astype("float64") for v in args]
        if len(xs) != len(self.inputs) or any(x.ndim != 1 for x in xs):
            raise TypeError(
                f"{type(self).__name__} needs vectors {', '.join(self.inputs)} (one entry per "
                f"{self.unit}); got ndim {', '.join(str(x.ndim) for x in xs)}"
            )
        n_out = 1 + len(self.inputs) - self.n_data
        return Apply(self, xs, [pt.vector(dtype="float64", shape=xs[-1].type.shape) for _ in range(n_out)])

    def perform(self, node: Apply, inputs: list, output_storage: list) -> None:
        for store, val in zip(output_storage, type(self).numpy_form(*inputs), strict=True):
            store[0] = np.asarray(val, dtype=np.float64)

    def infer_shape(self, node: Apply, shapes: list) -> list:
        return [shapes[-1]] * len(node.outputs)

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        n_out = len(node.outputs)
        return [[k >= self.n_data] * n_out for k in range(len(self.inputs))]

    def pullback(self, inputs: list, outputs: list, output_grads: list) -> list:
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[1:]):
            raise NotImplementedError(f"{type(self).__name__}: second derivatives are not implemented")
        g = output_grads[0]
        if isinstance(g.type, DisconnectedType):
            return [disconnected_type()] * len(inputs)
        return [disconnected_type()] * self.n_data + [g * d for d in outputs[1:]]


def source_version(*parts: Any) -> int:
    """A 48-bit number from the source of ``parts`` (functions, modules) and the repr of anything else."""
    text = "".join(
        inspect.getsource(p) if inspect.isfunction(p) or inspect.ismodule(p) else repr(p) for p in parts
    )
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big")


#: (Op class, ``kernel(op, jnp) -> callable``) for the JAX backend, registered when it loads
_JAX_KERNELS: list[tuple[type, Callable[[Any, Any], Callable[..., Any]]]] = []
_JAX_DISPATCH = "pytensor.link.jax.dispatch.basic"


def register_jax(op_type: type, numpy_form: Callable[..., Any] | None = None, *,
                 kernel: Callable[[Any, Any], Callable[..., Any]] | None = None) -> None:  # fmt: skip
    """Give ``op_type`` a JAX implementation: ``numpy_form(*inputs, xp=jax.numpy)``, or ``kernel(op, jax.numpy)``.

    The gradient graph comes from the Op's pullback, as on every other
    backend. Nothing of jax is imported here (importing it costs 0.75 s of
    every ``import hierbench.bayes``): the kernels are registered with
    PyTensor's ``jax_funcify`` when PyTensor's JAX backend is first imported
    (by ``mode="JAX"`` or PyMC's numpyro route), or now if it already is.
    """
    if kernel is None:

        def kernel(op: Any, jnp: Any) -> Callable[..., Any]:
            return lambda *inputs: numpy_form(*inputs, xp=jnp)

    _JAX_KERNELS.append((op_type, kernel))
    if _JAX_DISPATCH in sys.modules:
        _register_jax_kernels(sys.modules[_JAX_DISPATCH])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def _register_jax_kernels(dispatch: Any) -> None:
    """Register every kernel of :data:`_JAX_KERNELS` not yet known to ``dispatch.jax_funcify``."""
    for op_type, kernel in _JAX_KERNELS:
        if op_type in dispatch.jax_funcify.registry:
            continue

        def funcify(op: Any, _kernel: Any = kernel, **kwargs: Any) -> Any:
            import jax.numpy as jnp

            return _kernel(op, jnp)

        dispatch.jax_funcify.register(op_type, funcify)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs :func:`_register_jax_kernels` right after PyTensor's JAX dispatch module is executed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _JAX_DISPATCH:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _register_jax_kernels(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
