"""A PyMC model sent to another process (a pool's or a Dask worker), with what pickling loses.

``pm.CustomDist`` makes a new random-variable class per call and registers its
log density, log CDF and support point for that class in PyMC's dispatch
tables of the building process. Pickled, the class travels (cloudpickle
rebuilds it by value) but the registrations do not: a worker that unpickles a
crossed model fails at compile time with ``NotImplementedError: Logprob method
not implemented for CustomDist_y_rv``. :func:`ship` packs the model with its
CustomDists' registered functions and :func:`unship` registers them again in
the receiving process before handing the model back.
"""

from __future__ import annotations

from typing import Any

import pymc as pm

__all__ = ["ship", "unship"]


def _dispatchers() -> tuple[Any, ...]:
    """PyMC's dispatch tables that ``pm.CustomDist`` fills for each of its classes."""
    from pymc.distributions.distribution import _support_point
    from pymc.logprob.abstract import _logcdf
    from pymc.logprob.abstract import _logprob

    return _logprob, _logcdf, _support_point


def _custom_types(model: pm.Model) -> list[type]:
    """The CustomDist random-variable classes anywhere in ``model``'s graph, in a fixed order."""
    from pymc.distributions.custom import CustomDistRV
    from pytensor.graph.traversal import ancestors

    outs = [*model.basic_RVs, *model.deterministics, *model.potentials]
    found: dict[type, None] = {}
    for var in ancestors(outs):
        op = getattr(var.owner, "op", None)
        if isinstance(op, CustomDistRV):
            found.setdefault(type(op))
    return list(found)


def ship(model: pm.Model) -> bytes:
    """``model`` pickled with cloudpickle, with its CustomDists' registered functions."""
    import cloudpickle

    tables = _dispatchers()
    overloads = [(t, [table.registry.get(t) for table in tables]) for t in _custom_types(model)]
    return cloudpickle.dumps((model, overloads))


def unship(blob: bytes) -> pm.Model:
    """The model :func:`ship` packed, its CustomDists registered in this process."""
    import cloudpickle

    model, overloads = cloudpickle.loads(blob)
    for rv_type, fns in overloads:
        for table, fn in zip(_dispatchers(), fns, strict=True):
            if fn is not None and rv_type not in table.registry:
                table.register(rv_type, fn)
    return model
