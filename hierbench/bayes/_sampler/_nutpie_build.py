"""Nutpie's numba build of a PyMC model, with its two C entry points cached on disk.

``nutpie.compile_pymc_model(model, backend="numba")`` has PyTensor build the
log density with its gradient, and the expansion to the traced variables, as
numba functions (PyTensor caches those kernels on disk), then wraps each in a
``numba.cfunc`` C entry point that reads the model's data from nutpie's
``user_data`` record. Those wrappers close over Python objects (the data
arrays, a record type with random field names), so numba compiles them again
in every process, and compiling the log density's wrapper re-optimises the
whole linked kernel: most of a first fit's build on warm caches.

:func:`build` makes the same :class:`nutpie.compile_pymc.CompiledPyMCModel`
with wrappers generated as source that reads only its arguments (the data
pointers, sizes and shapes at fixed offsets of the record) and calls
PyTensor's kernel, so numba can cache them: under PyTensor's numba cache
directory (``base_compiledir``), keyed by the generated source and PyTensor's
own cache key of the kernel it calls. The graph is nutpie's with one
difference: where nutpie writes the sizes of the free variables into it
(the flat vector's length and each variable's slice), :func:`_layout` reads
them from model data, so a model of the same structure at another size (a
new leaderboard, more tasks) is the same kernel and loads from the cache
instead of compiling for 12-16 s (the crossed model keeps its own sizes in
data as well). The wrapper does what nutpie's does
(same return codes, same arithmetic). Reading the sizes as data can change
the order of a reduction PyTensor's rewrites choose: the log density and
gradient equal nutpie's own build's to the bit on the test model (whose
seeded draws are then the same), the crossed model (marginal, with
clusters) and the beta-binomial, and agree within 3e-14 on the crossed
model's latent form and the 2PL model. A seeded fit is the same whether
its kernel was compiled or loaded, since both are this build. Where this path cannot be used
(another nutpie or PyTensor than it was written for, PyTensor's numba cache
switched off, a kernel PyTensor does not cache, an unreadable cache entry)
:func:`build` returns ``None`` with the reason, and the caller uses nutpie's
own path.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["FAILED", "NUTPIE_SERIES", "build", "unusable"]

#: the nutpie release series whose internals :func:`build` follows
NUTPIE_SERIES = "0.16."
#: how the reason starts when the cached path failed (rather than did not apply)
FAILED = "hierbench's cached nutpie build failed"
#: bump when the generated source changes meaning without changing its text
_VERSION = "1"

_LOGP_SRC = """
def {name}(dim, x_, out_, logp_, user_data_):
    try:
{unpack}
        x = numba.carray(x_, (dim,))
        out = numba.carray(out_, (dim,))
        logp = numba.carray(logp_, ())
        logp_val, grad = inner(x{args})
        logp[()] = logp_val
        out[...] = grad
        if not np.all(np.isfinite(out)):
            return 3
        if not np.isfinite(logp_val):
            return 4
    except Exception:
        return 1
    return 0
"""

_EXPAND_SRC = """
def {name}(dim, expanded, x_, out_, user_data_):
    try:
{unpack}
        x = numba.carray(x_, (dim,))
        out = numba.carray(out_, (expanded,))
        (values,) = inner(x{args})
        out[...] = values
    except Exception:
        return -2
    return 0
"""


def _unpack(keys: list[str], shared: dict[str, Any], record: Any) -> tuple[str, str]:
    """Source that views each datum named by ``keys`` from the record, and the call's arguments."""
    fields = record["shared"]
    base = record.fields["shared"][1]

    def word(part: str, key: str, i: int = 0) -> int:
        return (base + fields.fields[part][1] + fields[part].fields[key][1]) // 8 + i

    lines = [f"        words = numba.carray(user_data_, ({record.itemsize // 8},), np.uint64)"]
    for j, key in enumerate(keys):
        value = shared[key]
        shape = "".join(f"np.intp(words[{word('shape', key, d)}]), " for d in range(value.ndim))
        lines.append(
            f"        d{j} = numba.carray(void_ptr(words[{word('data', key)}]), ({shape}), "
            f"np.{value.dtype.name})"
        )
    return "\n".join(lines), "".join(f", d{j}" for j in range(len(keys)))


def _void_ptr() -> Any:
    """A numba intrinsic: the address in an integer as a ``void*``."""
    from numba.core import cgutils
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def void_ptr(typingctx, src):
        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], cgutils.voidptr_t)

        return types.voidptr(src), codegen

    return void_ptr


def _cached_cfunc(src: str, name: str, inner: Any, sig: Any, salt: str) -> Any:
    """``numba.cfunc(sig, cache=True)`` of the function ``name`` defined by ``src``.

    Cached under PyTensor's numba cache directory, keyed by ``src`` and ``salt``;
    an entry that cannot be loaded is dropped and compiled again.
    """
    import numba
    import numpy as np
    from numba.core import sigutils
    from numba.core.ccallback import CFunc
    from pytensor.link.numba.cache import compile_numba_function_src

    key = hashlib.sha256(f"{_VERSION}\n{salt}\n{src}".encode()).hexdigest()
    # a module name, so that a loaded entry can rebuild its environment (numba imports the module)
    env = {"__name__": __name__, "numba": numba, "np": np, "inner": inner, "void_ptr": _void_ptr()}
    fn = compile_numba_function_src(src, name, global_env=env, cache_key=f"hierbench_{key}")
    # what numba.cfunc(sig, cache=True) makes, with the first load's failure handled
    cfunc = CFunc(fn, sigutils.normalize_signature(sig), locals={}, options={})
    cfunc.enable_caching()
    try:
        cfunc.compile()
    except Exception:  # an unreadable entry: forget it, compile and store anew
        cfunc._cache.flush()
        cfunc.compile()
    return cfunc


def _kernel_key(fn_pt: Any) -> str | None:
    """PyTensor's cache key of a compiled function's numba kernel (None: it is not cached)."""
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

    jit_fn = fn_pt.vm.jit_fn
    return CACHED_SRC_FUNCTIONS.get(getattr(jit_fn, "py_func", None))


def unusable() -> str | None:
    """Why :func:`build` cannot be used in this environment (None: it can)."""
    import nutpie
    import pytensor

    if not nutpie.__version__.startswith(NUTPIE_SERIES):
        return f"nutpie {nutpie.__version__} (the cached build follows nutpie {NUTPIE_SERIES}x)"
    if not pytensor.config.numba__cache:
        return "PyTensor's numba cache is off (numba__cache=False)"
    try:
        from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS  # noqa: F401
        from pytensor.link.numba.cache import compile_numba_function_src  # noqa: F401
    except ImportError as err:
        return f"PyTensor {pytensor.__version__} has no numba source cache ({err})"
    return None


def _layout(model: Any, dims: list[tuple[int, ...]], offsets: list[int]) -> tuple[Any, list[Any]]:
    """The free variables' place in the flat vector, as data: a shared int vector and each variable's view.

    ``dims`` and ``offsets`` are the free variables' shapes and their
    places in the flat vector (one more offset than there are variables, as
    :func:`_functions` works them out for every traced variable).
    ``layout`` holds the offsets and then the dimensions of each; a variable's view of the flat
    vector ``x`` slices and reshapes by those entries. The graph therefore
    holds no size (only each variable's number of dimensions), so a model of
    the same structure at another size is the same kernel: PyTensor and the
    C wrappers load from the disk cache rather than compile again (nutpie's
    own build writes the sizes into the graph).
    """
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    layout = pytensor.shared(np.array([*offsets, *(d for ds in dims for d in ds)], dtype=np.int64),
                             name="hierbench_layout")  # fmt: skip
    x = pt.dvector("_unconstrained_point")
    views, pos = [], len(dims) + 1
    for i, (rv, ds) in enumerate(zip(model.free_RVs, dims, strict=True)):
        shape = tuple(layout[pos + d] for d in range(len(ds)))
        pos += len(ds)
        views.append(x[layout[i] : layout[i + 1]].reshape(shape, ndim=len(ds)).astype(rv.dtype))
    return x, views


def _functions(model: Any) -> tuple:
    """PyTensor's numba functions for ``model``: what nutpie's numba path compiles, sizes as data.

    The log density (rewritten and differentiated as nutpie does), its
    gradient and the expansion to every traced variable, on the flat vector
    laid out as nutpie lays it out (free variables, then the rest, in model
    order); only the slicing reads its sizes from :func:`_layout`.
    """
    import itertools
    import math

    import pytensor.tensor as pt
    from nutpie import compile_pymc as cp
    from pymc.initial_point import make_initial_point_fn
    from pymc.pytensorf import compile as compile_pymc
    from pytensor.graph import clone_replace
    from pytensor.graph import rewrite_graph

    point_fn = make_initial_point_fn(
        model=model, overrides=None, default_strategy="support_point",
        jitter_rvs=set(model.free_RVs), return_transformed=True,
    )  # fmt: skip
    shapes = cp._compute_shapes(model)
    values = [model.rvs_to_values[v] for v in model.free_RVs]
    names = [v.name for v in values]
    rest = [v for v in model.unobserved_value_vars if v.name not in names]
    all_names = [*names, *(v.name for v in rest)]
    all_shapes = [tuple(int(d) for d in shapes[n]) for n in all_names]
    ends = [0, *itertools.accumulate(math.prod(s) for s in all_shapes)]  # free variables, then the rest
    x, views = _layout(model, all_shapes[: len(names)], ends[: len(names) + 1])
    replace = dict(zip(values, views, strict=True))
    rewrites = ["canonicalize", "stabilize"]
    if not model.check_bounds:
        rewrites.append("local_remove_check_parameter")
    logp = rewrite_graph(model.logp(), include=rewrites)
    grad = pt.concatenate(
        [pt.as_tensor(g, allow_xtensor_conversion=True).ravel() for g in pt.grad(logp, values)]
    )
    logp, grad = clone_replace([logp, grad], replace)
    flat = pt.concatenate(
        [*[v.ravel() for v in views], *[pt.as_tensor(v, allow_xtensor_conversion=True).ravel() for v in rest]]
    )
    with model:
        logp_fn = compile_pymc((x,), (logp, grad), mode="NUMBA")
        expand_fn = compile_pymc((x,), [flat], givens=list(replace.items()), mode="NUMBA")
    slices = [slice(a, b) for a, b in itertools.pairwise(ends)]
    n_dim = ends[len(names)]
    start = cp._rv_dict_to_flat_array_wrapper(
        cp._wrap_with_lock(point_fn), names=names, shapes=all_shapes[: len(names)]
    )
    reparam = [model.rvs_to_values[v].name for v in model.free_RVs if model.rvs_to_transforms.get(v) is not None]
    return n_dim, ends[-1], logp_fn, expand_fn, start, (all_names, slices, all_shapes), reparam


def _wrappers(logp_pt: Any, expand_pt: Any, keys: dict, shared: dict, record: Any) -> tuple[Any, Any] | str:
    """The two cached C entry points, or why they cannot be made."""
    import numba
    from numba import types as nt

    logp_key, expand_key = _kernel_key(logp_pt), _kernel_key(expand_pt)
    if logp_key is None or expand_key is None:
        return "PyTensor does not cache this model's numba kernel"
    ptr = nt.CPointer(nt.double)
    out = []
    for src, fn_pt, key, sig in (
        (_LOGP_SRC, logp_pt, logp_key, nt.int64(nt.uint64, ptr, ptr, ptr, nt.voidptr)),
        (_EXPAND_SRC, expand_pt, expand_key, nt.int64(nt.uint64, nt.uint64, ptr, ptr, nt.voidptr)),
    ):
        unpack, args = _unpack([keys[v] for v in fn_pt.get_shared()], shared, record)
        name = "hierbench_logp" if src is _LOGP_SRC else "hierbench_expand"
        text = src.format(name=name, unpack=unpack, args=args)
        try:
            out.append(
                _cached_cfunc(text, name, fn_pt.vm.jit_fn, sig, f"{key}\n{numba.__version__}")
            )
        except Exception as err:  # still unreadable, or the wrapper does not compile
            return f"{FAILED} ({type(err).__name__}: {err})"
    return out[0], out[1]


def build(model: Any) -> tuple[Any, str | None]:
    """``model`` built as nutpie's numba path builds it, with cached C wrappers.

    Returns the :class:`~nutpie.compile_pymc.CompiledPyMCModel` and None, or
    None and the reason the cached path cannot be used (then build with
    ``nutpie.compile_pymc_model``). Call under the caller's PyTensor flags
    (:func:`hierbench.bayes._sampler._sampling.compile_model` turns fast-math off).
    """
    import numpy as np
    from nutpie import compile_pymc as cp

    reason = unusable()
    if reason is not None:
        return None, reason
    n_dim, n_expanded, logp_pt, expand_pt, point_fn, shape_info, reparam = _functions(model)
    keys: dict[Any, str] = {}
    shared: dict[str, np.ndarray] = {}
    for var in [*logp_pt.get_shared(), *expand_pt.get_shared()]:
        if var not in keys:
            keys[var] = f"s{len(keys)}"
            shared[keys[var]] = np.array(var.get_value(), order="C", copy=True)
            shared[keys[var]].flags.writeable = False
    user_data = cp.make_user_data(keys, shared)
    made = _wrappers(logp_pt, expand_pt, keys, shared, user_data.dtype)
    if isinstance(made, str):
        return None, made
    dims, coords = cp._prepare_dims_and_coords(model, shape_info, reparam)
    return cp.CompiledPyMCModel(
        _n_dim=n_dim, dims=dims, _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info, strict=True)},
        compiled_logp_func=made[0], compiled_expand_func=made[1], initial_point_func=point_fn,
        shared_data=shared, shared_var_keys=keys, user_data=user_data, n_expanded=n_expanded,
        shape_info=shape_info, logp_func=logp_pt, expand_func=expand_pt,
        reparameterized_names=reparam,
    ), None  # fmt: skip
