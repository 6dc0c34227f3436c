"""The default NUTS run: one reproducible compile, a start at the mode, draws until the targets hold.

:func:`hierbench.bayes.fit` and :func:`hierbench.bayes.fit_replicates` run
nutpie through this module in three steps.

1. **Compile** (:func:`compile_model`) with PyTensor's numba ``fastmath``
   off. With it on, a model compiled against an empty PyTensor cache
   (``base_compiledir``) and the same model loaded from a warm one gave
   gradients that differ in the last bit (the transform's reductions are
   fused differently when the cached kernels are linked rather than inlined),
   so a seeded fit drew different chains on its first run. Without fast-math
   LLVM may not re-associate or contract across those boundaries, the two
   builds are bit-identical, and the gradient is no slower (measured on the
   crossed model at 12 x 500 x 10).
2. **Start at the mode** (:func:`find_start`): L-BFGS on the compiled
   log density (no second compile) from the model's initial point, then the
   curvature there (a finite-difference Hessian of the compiled gradient, or
   L-BFGS's own inverse-Hessian diagonal in more than
   :data:`HESSIAN_MAX_DIM` dimensions). Each chain starts at a draw from that
   Laplace approximation. nutpie has no setting for an initial mass matrix,
   so the curvature shapes the starting points only; its adaptation starts
   from there. A mode that is not found (no convergence, a boundary, a
   curvature that is not positive) falls back to PyMC's jittered support
   point, and the fit says so. The search and the draws run on one BLAS
   thread (:func:`one_blas_thread`), so a seed gives the same start in a
   plain process and in a Dask worker, whose BLAS has one thread.
3. **Draw to a target** (:func:`sample_to_target`): the chains run with a
   cap of ``max_draws`` each; at fixed checkpoints the first ``n`` draws of
   every chain are checked with :func:`~hierbench.bayes.compute_diagnostics`
   (R-hat within its limit, no non-finite draw) and the bulk and tail ESS of
   every posterior element against ``target_ess``; after one that fails,
   the next checked is where its draws predict success, at most 1.5 times
   as many draws (a prediction from few draws overshoots: a study of the
   crossed fit found runs kept 300-700 draws per chain where 250-350 had
   passed, ``benchmarks/bench_tuning.py``); the first checked checkpoint
   that passes ends the run and the draws beyond it are dropped. The
   decision at a checkpoint depends on those draws alone, so the result is
   the same whatever the machine's speed. A checkpoint reads its draws from
   nutpie's Arrow snapshot (:mod:`hierbench.bayes._sampler._nutpie_trace`); only the
   kept draws are converted to a DataTree.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import threading
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import xarray as xr

from ..._base import fit_checks
from ..._base import fit_record
from ..._base import warn_user
from ..._parallel import available_cores
from .._checks._diagnostics import DEFAULT_MAX_DRAWS
from .._checks._rankstats import elements
from .._checks._rankstats import rank_diagnostics
from .._checks._rankstats import tail_ess
from ._nutpie_build import FAILED
from ._nutpie_trace import checkpoint_draws

__all__ = [
    "DEFAULT_TUNE",
    "FIT_DEFAULTS",
    "HESSIAN_MAX_DIM",
    "MAX_DRAWS",
    "MAX_JUMP",
    "TARGET_ESS",
    "checkpoints",
    "compile_model",
    "describe_r_hat",
    "exact_numba",
    "find_start",
    "next_checkpoint",
    "report_ms",
    "sample_to_target",
    "saturating_growth",
]

#: bulk and tail ESS every posterior element must reach before the default fit stops drawing
TARGET_ESS = 400
#: cap on the draws per chain of the default fit (owned where the diagnostics' advice reads it too:
#: the checks cannot import the sampler)
MAX_DRAWS = DEFAULT_MAX_DRAWS

#: tuning steps per chain of the default fit (it starts near the mode)
DEFAULT_TUNE = 300

#: what :func:`hierbench.bayes.fit` does by default, as the zoo's ``models/<name>/spec.toml``
#: ``[sampler]``
#: tables write it (a model's registered ``target_accept`` comes on top)
FIT_DEFAULTS: dict[str, Any] = {
    "sampler": "nutpie",
    "chains": 4,
    "tune": DEFAULT_TUNE,
    "init": "map",
    "draws": "target_ess",
    "target_ess": TARGET_ESS,
    "max_draws": MAX_DRAWS,
}
#: up to this many unconstrained dimensions the start's curvature is a full Hessian
HESSIAN_MAX_DIM = 2000
#: how often nutpie reports the chains' progress to a run to a target: about every
#: ``REPORT_EVALS`` log-density evaluations (timed at the start's mode search), within
#: ``REPORT_MS`` (ms); 100 ms with a progress bar shown (nutpie redraws it at every report)
#: or without a timing. At a fixed 100 ms a small model's chains had run to their
#: 2,000-draw cap before the first checkpoint was looked at; reported on every ~40
#: evaluations they are paused near it. Beta-binomial small SBC replicates, 3 x 40
#: alternating: 16.1-17.7 -> 14.4-15.4 s wall, 21.7-23.8 -> 19.3-20.6 CPU-s, the same records
REPORT_EVALS, REPORT_MS = 40, (5, 100)
#: draws per chain at which a run to a target may be checked (then on by a quarter each time);
#: about an eighth apart, so that a predicted checkpoint overshoots by little
CHECKPOINTS = (100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000,
               1150, 1300, 1450, 1600, 1800, 2000)  # fmt: skip


def checkpoints(max_draws: int) -> list[int]:
    """Draw counts per chain at which a run to a target is checked, ending at ``max_draws``.

    Examples
    --------
    >>> checkpoints(700)
    [100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 700]
    >>> checkpoints(3000)[-3:]
    [2000, 2500, 3000]
    """
    out = [n for n in CHECKPOINTS if n < max_draws]
    n = CHECKPOINTS[-1]
    while n * 1.25 < max_draws:
        n = round(n * 1.25 / 50.0) * 50
        out.append(n)
    return [*out, int(max_draws)]


def compile_model(model: Any) -> Any:
    """Nutpie's numba build of ``model``, with fast-math off (see the module docstring).

    Built by :func:`hierbench.bayes._sampler._nutpie_build.build`, whose C entry points
    numba caches on disk (a later process loads them instead of compiling);
    where that cannot be used, by ``nutpie.compile_pymc_model`` (the same
    function, compiled in every process). A build that fails for another
    reason than the environment says so in a warning.
    """
    return compile_and_say(model)[0]


def exact_numba() -> Any:
    """A context in which PyTensor compiles numba functions with fast-math off.

    The model's log density for nutpie (:func:`compile_and_say`; the module
    docstring says why) and the groups added after sampling (log-likelihood,
    predictive draws, in :func:`hierbench.bayes.fit` and ``fit_approx``) are
    compiled in it, and so are PyMC's own NUTS (``sampler="pymc"``, whose chains
    in forked processes inherit the setting) and ``fit_approx``'s variational
    fit and its draws.
    With one setting, a kernel they share (the likelihood's
    elementwise pieces) is compiled and cached once rather than once per
    setting (a fresh CI run's cache held 119 kernels built both ways); with
    fast-math on, the groups compiled on an empty cache could differ in the
    last bit from the same groups loaded from a warm one, as the log density
    did.
    """
    import pytensor

    return pytensor.config.change_flags(numba__fastmath=False)


def compile_and_say(model: Any) -> tuple[Any, str]:
    """:func:`compile_model`'s build and how it was made (the fit's ``fit_run`` says it as ``build``)."""
    import nutpie

    from ._nutpie_build import build

    with exact_numba():
        compiled, reason = build(model)
        if compiled is not None:
            loaded = min(compiled.compiled_logp_func.cache_hits, compiled.compiled_expand_func.cache_hits) > 0
            how = "loaded from the disk cache" if loaded else "compiled and stored in the disk cache"
            return compiled, f"hierbench's C entry points, {how}"
        if reason.startswith(FAILED):
            warn_user(f"{reason}; compiled with nutpie's own path instead", RuntimeWarning)
        return nutpie.compile_pymc_model(model, backend="numba"), f"nutpie's own path ({reason})"


class _NegLogDensity:
    """``-log p(x)`` and its gradient on the unconstrained space, from the compiled function."""

    def __init__(self, compiled: Any):
        self._fn = compiled.compiled_logp_func.ctypes
        self._user = compiled.user_data  # the swapped-in data live here
        self.n = int(compiled.n_dim)
        self.calls = 0

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.ascontiguousarray(x, dtype=np.float64)
        grad = np.empty(self.n)
        logp = np.empty(())
        ptr = ctypes.POINTER(ctypes.c_double)
        rc = self._fn(
            self.n, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr),
            self._user.ctypes.data,
        )
        self.calls += 1
        if rc != 0 or not np.isfinite(logp):
            return np.inf, np.zeros(self.n)  # L-BFGS backs off a point outside the support
        return -float(logp), -grad


#: held while the start's linear algebra runs on one BLAS thread (the limit is the process's)
_ONE_BLAS_THREAD = threading.Lock()


def one_blas_thread() -> Any:
    """A context in which BLAS and LAPACK run on one thread.

    The start's L-BFGS, Hessian eigendecomposition and Laplace draws give different
    last bits on different numbers of BLAS threads (a multi-threaded product sums in
    another order), and the chains then draw differently: a Dask worker (one BLAS
    thread, from its ``OPENBLAS_NUM_THREADS=1``) and this process (as many as cores)
    gave one replicate of the crossed medium SBC design 900 and 700 draws per chain.
    On one thread a seed gives the same start in any process.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _hessian(f: _NegLogDensity, x: np.ndarray) -> np.ndarray:
    """Forward-difference Hessian of ``f`` from its gradient (``n`` gradient calls), symmetrised."""
    g0 = f(x)[1]
    h = 1e-5 * np.maximum(1.0, np.abs(x))
    out = np.empty((x.size, x.size))
    for i in range(x.size):
        e = x.copy()
        e[i] += h[i]
        out[:, i] = (f(e)[1] - g0) / h[i]
    return 0.5 * (out + out.T)


def _laplace_factor(f: _NegLogDensity, res: Any) -> tuple[np.ndarray | None, str]:
    """A matrix ``L`` with ``L L^T`` the Laplace covariance at the mode, or None and why not."""
    x = res.x
    if x.size <= HESSIAN_MAX_DIM:
        w, v = np.linalg.eigh(_hessian(f, x))
        if not np.all(np.isfinite(w)) or w.min() <= 1e-8 * max(w.max(), 1e-300):
            return None, "the curvature at the optimum is not positive definite"
        return v / np.sqrt(w), "hessian"
    n = x.size
    diag = np.concatenate(
        [np.diag(res.hess_inv.matmat(np.eye(n)[:, i : i + 256]), -i) for i in range(0, n, 256)]
    )
    if not np.all(np.isfinite(diag)) or diag.min() <= 0:
        return None, "the L-BFGS curvature is not positive"
    return np.diag(np.sqrt(diag)), "lbfgs_diagonal"


@dataclasses.dataclass(frozen=True)
class Start:
    """Where the chains start: the mode and its Laplace factor, or None (PyMC's own start)."""

    mode: np.ndarray | None
    factor: np.ndarray | None
    info: dict[str, Any]

    def __call__(self, seed: Any) -> np.ndarray:
        """Nutpie's per-chain initial point: a draw from the Laplace approximation (BLAS on one thread)."""
        z = np.random.default_rng(seed).standard_normal(self.mode.size)
        with _ONE_BLAS_THREAD, one_blas_thread():
            return self.mode + self.factor @ z


def mode_and_factor(f: Any, x0: np.ndarray) -> tuple[Any, np.ndarray | None, str | None]:
    """L-BFGS from ``x0`` on ``f`` (value and gradient) and the Laplace factor there, on one BLAS thread.

    Returns scipy's result, the factor (None without a usable mode) and why there is none, or
    the factor's kind (``"hessian"`` or ``"lbfgs_diagonal"``) when there is one. See
    :func:`one_blas_thread` for why one thread.
    """
    from scipy import optimize

    with np.errstate(all="ignore"), _ONE_BLAS_THREAD, one_blas_thread():
        # a start needs no more: a gradient under 1e-3 puts it within 1e-3 sd of the mode
        # along any direction whose posterior sd is at most 1
        res = optimize.minimize(f, x0, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-3})
        if not (res.success and np.all(np.isfinite(res.x)) and np.isfinite(res.fun)):
            return res, None, f"the optimiser did not converge ({res.message})"
        if np.abs(res.x).max() > 25:
            return res, None, "the optimum lies at a boundary of the unconstrained space (an improper mode)"
        factor, kind = _laplace_factor(f, res)
    return res, factor, kind


def find_start(compiled: Any, seed: int) -> Start:
    """The mode of the compiled log density and its curvature (see the module docstring).

    Parameters
    ----------
    compiled : nutpie compiled model
        From :func:`compile_model` (possibly with swapped data).
    seed : int
        Seeds the model's jittered initial point the optimiser starts from.

    Returns
    -------
    Start
        ``mode``, ``factor`` and an ``info`` dict for the fit's attrs
        (``init`` is ``"map"`` or ``"support_point"`` with the reason).
    """
    t0 = time.perf_counter()
    f = _NegLogDensity(compiled)
    x0 = np.asarray(compiled.initial_point_func(int(seed)), dtype=np.float64)
    res, factor, said = mode_and_factor(f, x0)
    info: dict[str, Any] = {
        "init": "map" if factor is not None else "support_point",
        "map_iterations": int(res.nit),
        "map_evaluations": int(f.calls),
        "map_seconds": round(time.perf_counter() - t0, 3),
    }
    if factor is None:
        info["init_fallback"] = said
        return Start(None, None, info)
    info["curvature"] = said
    return Start(res.x, factor, info)


def with_start(compiled: Any, start: Start) -> Any:
    """``compiled`` whose chains start from ``start`` (unchanged when there is no mode)."""
    if start.mode is None:
        return compiled
    return dataclasses.replace(compiled, initial_point_func=start)


class _Progress:
    """Post-warmup draws finished per chain, from nutpie's progress callback."""

    def __init__(self, tune: int):
        self.tune = tune
        self.done = 0
        self.lock = threading.Lock()

    def __call__(self, chains: list[Any]) -> None:
        with self.lock:
            self.done = min(max(0, int(c.finished_draws) - self.tune) for c in chains)


def _finished(sampler: Any) -> bool:
    """Whether nutpie's background sampler stopped (its check raises TimeoutError while running)."""
    try:
        return bool(sampler.is_finished)
    except TimeoutError:
        return False


def _checkpoint(sampler: Any, n: int, working: frozenset[str] = frozenset()) -> np.ndarray:
    """The draws a checkpoint at ``n`` checks: from nutpie's Arrow snapshot, else its converted trace.

    ``working``: the model's working parameters (``info["working_vars"]``), left out: no reported
    quantity depends on them, and the fit sets them aside after sampling.
    """
    x = checkpoint_draws(sampler, n, skip=working)
    return x if x is not None else elements(_checked(_head(sampler.inspect(), n), working))


def _checked(dt: xr.DataTree, working: frozenset[str]) -> xr.Dataset:
    """The posterior the stopping rule checks: every variable but the model's working parameters."""
    return dt["posterior"].to_dataset().drop_vars(list(working), errors="ignore")


def _head(dt: xr.DataTree, n: int) -> xr.DataTree:
    """The first ``n`` draws of every chain (posterior and sample_stats)."""
    groups = {
        k: v.to_dataset().isel(draw=slice(0, n))
        for k, v in dt.children.items()
        if not k.startswith("warmup") and "draw" in v.dims
    }
    out = xr.DataTree.from_dict(groups)
    out.attrs = dict(dt.attrs)
    return out


def _grow_for(ess: np.ndarray, need: float) -> float:
    """How many times the draws must grow for the smallest finite ``ess`` to reach ``need`` (at least 1)."""
    v = ess[np.isfinite(ess)]
    return max(1.0, need / max(v.min(), 1.0)) if v.size else 1.0


def assess(
    x: np.ndarray, target_ess: float, enough: float = np.inf, workers: int = 1
) -> tuple[bool, float, dict[str, np.ndarray] | None]:
    """Whether draws ``x`` (elements, chains, draws) meet the fit's targets, and how many times more would.

    The targets: finite draws; every element's rank R-hat within
    :func:`~hierbench.bayes._checks._diagnostics.r_hat_limit` (of its own per-chain
    ESS and the number of elements: the rule of ``compute_diagnostics``); bulk
    and tail ESS of every element at least ``target_ess`` (and the
    diagnostics' own per-chain threshold). The second value predicts the
    factor by which the draws must grow: ESS grows with the draws, R-hat's
    excess over 1 shrinks with them.

    The tail ESS is computed first (it needs no ranks). If it alone predicts
    a growth of at least ``enough``, the draws fail and that prediction is
    returned without the rest: a caller that passes the growth beyond which
    its next step no longer changes (:func:`saturating_growth`) decides
    exactly as with every statistic, at a fraction of the cost. The third
    value is :func:`rank_diagnostics` of ``x`` where computed (else None). ``workers``: the
    threads the statistics may use (the same numbers whatever their count).
    """
    from .._checks._diagnostics import DEFAULT_THRESHOLDS
    from .._checks._diagnostics import r_hat_limit

    if not np.isfinite(x).all():
        return False, 1.25, None
    _, c, n = x.shape
    need = max(float(target_ess), DEFAULT_THRESHOLDS["ess_bulk_per_chain"] * c)
    tail = tail_ess(x, workers=workers)
    grow = _grow_for(tail, need)
    if grow > 1.0 and grow >= enough:
        return False, grow, None
    d = rank_diagnostics(x, tail=tail, workers=workers)
    grow = max(grow, _grow_for(d["ess_bulk"], need))
    ok = np.isfinite(d["r_hat"])
    if ok.any():
        ev = np.where(np.isfinite(d["ess_within"]), d["ess_within"], 1.0)[ok]
        lim = r_hat_limit(ev, int(ok.sum()), c, n, DEFAULT_THRESHOLDS["r_hat"])
        over = (d["r_hat"][ok] - 1.0) / np.maximum(lim - 1.0, 1e-9)
        grow = max(grow, float(over.max()))
    passed = grow <= 1.0 and not (ok.any() and np.any(d["r_hat"][ok] > lim))
    return bool(passed), float(grow), d


#: the most a failed checkpoint's prediction may multiply the draws by before the next check
MAX_JUMP = 1.5
#: a checkpoint within this share of the predicted draws counts as reaching them (the one rule of
#: :func:`next_checkpoint` and :func:`saturating_growth`: if they differed, the tail-first check
#: would no longer decide as the full one does)
REACH = 0.95


def saturating_growth(plan: list[int], n: int) -> float:
    """The predicted growth at ``n`` from which :func:`next_checkpoint` gives the same answer.

    At or beyond it the jump is capped at the last checkpoint within
    :data:`MAX_JUMP` times ``n``, whatever the prediction; infinite where no
    checkpoint lies within that cap (the prediction then decides).

    Examples
    --------
    >>> saturating_growth(checkpoints(2000), 100)  # the cap at 150: any growth >= 150 / 95
    1.5789473684210527
    """
    cap = _cap(plan, n)
    return cap / (REACH * n) if cap is not None else np.inf


def _cap(plan: list[int], n: int) -> int | None:
    """The last checkpoint within :data:`MAX_JUMP` times ``n`` (None: there is none)."""
    within = [k for k in plan if n < k <= MAX_JUMP * n]
    return within[-1] if within else None


def next_checkpoint(plan: list[int], n: int, grow: float, max_draws: int) -> int:
    """The checkpoint after a failed one at ``n``: where its draws predict success, within 1.5 n.

    ``grow`` is :func:`assess`'s predicted factor. A prediction from few draws
    overshoots (early R-hat and tail ESS are noisy), and a jump past a
    checkpoint that would have passed keeps draws nobody needed, so the jump
    goes no further than the last checkpoint within :data:`MAX_JUMP` times the
    draws (where the plan has one); the decision still depends on the draws
    alone.

    Examples
    --------
    >>> plan = checkpoints(2000)
    >>> next_checkpoint(plan, 100, 4.0, 2000), next_checkpoint(plan, 300, 1.2, 2000)
    (150, 350)
    """
    predicted = next(k for k in plan if (k > n and k >= REACH * grow * n) or k == max_draws)
    cap = _cap(plan, n)
    return min(predicted, cap) if cap is not None else predicted


def report_ms(record: dict[str, Any]) -> int:
    """How often (ms) nutpie should report progress, from the start's cost per evaluation.

    Examples
    --------
    >>> report_ms({"map_evaluations": 610, "map_seconds": 0.34})
    22
    >>> report_ms({"map_evaluations": 80, "map_seconds": 0.004})
    5
    >>> report_ms({"init": "support_point"})
    100
    """
    n, s = record.get("map_evaluations"), record.get("map_seconds")
    if not n or s is None:
        return REPORT_MS[1]
    return int(min(max(REPORT_EVALS * 1000.0 * s / n, REPORT_MS[0]), REPORT_MS[1]))


def sample_to_target(
    compiled: Any,
    *,
    tune: int,
    chains: int,
    seed: int,
    target_ess: float,
    max_draws: int,
    progress: bool,
    every_ms: int = REPORT_MS[1],
    working: frozenset[str] = frozenset(),
    **kwargs: Any,
) -> tuple[xr.DataTree, dict[str, Any], dict[str, xr.Dataset] | None]:
    """Run nutpie until the first checkpoint whose draws pass (see the module docstring).

    Every chain runs at once (``cores = chains``): a checkpoint needs the same
    number of draws from each. After a checkpoint that fails, the next one
    checked is the first where the failing draws predict success (see
    :func:`assess`), but no more than 1.5 times as many draws
    (:func:`next_checkpoint`); the choice depends on the draws alone. Returns the tree
    (warm-up dropped), a record of the run (draws kept per chain, whether
    the targets were reached, checkpoints checked) and the last check's
    per-element statistics of the kept draws (:func:`_known`). ``every_ms`` is
    how often nutpie reports progress (:func:`report_ms`; 100 with a progress
    bar); the run looks at it twice as often. Neither changes a draw. ``working``: variables the
    checks leave out (the model's working parameters, ``info["working_vars"]``).
    """
    import nutpie

    track = _Progress(tune)
    theirs = kwargs.pop("progress_callback", None)  # a caller's own progress display (the CLI's)

    def both(chains_state: list[Any]) -> None:
        track(chains_state)
        if theirs is not None:
            theirs(chains_state)

    rate = REPORT_MS[1] if progress else every_ms
    sampler = nutpie.sample(
        compiled, draws=max_draws, tune=tune, chains=chains, cores=chains, seed=seed,
        save_warmup=False, progress_bar=progress, blocking=False,
        progress_callback=both, progress_rate=rate, **kwargs,
    )  # fmt: skip
    checked, plan = 0, checkpoints(max_draws)
    # where the chains' threads leave no core free, they wait while their draws are checked:
    # running on, they would take most of the CPU the check needs, for draws that a passing
    # check throws away (pausing changes when a draw is made, never the draw)
    cores = available_cores()
    crowded = chains >= cores
    # the check's threads: every core while the chains wait, else those the chains leave free
    workers = cores if crowded else max(1, cores - chains)
    n = plan[0]
    try:
        while n < max_draws:
            while track.done < n and not _finished(sampler):
                time.sleep(rate / 2000.0)
            checked += 1
            if crowded:
                sampler.pause()
            ok, grow, stats = assess(
                _checkpoint(sampler, n, working), target_ess, enough=saturating_growth(plan, n), workers=workers
            )
            if ok:
                dt = _head(sampler.abort(), n)
                return dt, {"draws": n, "reached": True, "checkpoints": checked}, _known(dt, stats, working)
            if crowded:
                sampler.resume()
            n = next_checkpoint(plan, n, grow, max_draws)
        dt = sampler.wait()
    except BaseException:
        sampler.cancel()
        raise
    dt = _head(dt, max_draws)
    reached, _, stats = assess(elements(_checked(dt, working)), target_ess)
    return dt, {"draws": max_draws, "reached": reached, "checkpoints": checked + 1}, _known(dt, stats, working)


def _known(
    dt: xr.DataTree, stats: dict[str, np.ndarray] | None, working: frozenset[str] = frozenset()
) -> dict[str, xr.Dataset] | None:
    """A check's statistics of ``elements(posterior)`` (less ``working``) per variable, for the diagnostics to reuse."""
    from .._checks._diagnostics import per_variable

    if stats is None:
        return None
    post = _checked(dt, working)
    return per_variable(post[[v for v in post.data_vars if np.issubdtype(post[v].dtype, np.number)]], stats)


def describe_run(record: dict[str, Any], tune: int) -> str:
    """One sentence for the fit's ``fit_notes`` attr: how the run started and why it stopped."""
    if record.get("init") == "map":
        head = (
            f"started at the posterior mode (L-BFGS, {record['map_evaluations']} evaluations), each "
            f"chain at a draw from the Laplace approximation ({record['curvature']})"
        )
    elif record.get("init") == "support_point":
        why = record.get("init_fallback", "as asked")
        head = f"started at PyMC's jittered support point ({why})"
    else:
        head = "started where the sampler starts by default"
    if record.get("rule") == "target_ess":
        tail = (
            f"drew until every element's bulk and tail ESS >= {record['target_ess']:g} and R-hat "
            f"within its limit: {'reached' if record['reached'] else 'NOT reached'} at "
            f"{record['draws']} draws per chain (cap {record['max_draws']})"
        )
    else:
        tail = f"{record['draws']} draws per chain (fixed)"
    return f"{head}; {tune} tuning steps; {tail}"


def describe_r_hat(attrs: dict[str, Any]) -> str:
    """One sentence for ``fit_notes``: the largest R-hat against the limit it was held to, and why.

    Read from a diagnosed fit's attrs (``diag_checks``, ``diag_thresholds``): the limit is the
    conventional one (``diag_thresholds['r_hat']``, 1.01) unless the number of elements checked
    and the element's ESS raise it (at most 1.05; ``diag_checks``' ``why``), and a raised limit
    is said with its figures, so that a converged fit's 1.033 does not read as contradicting 1.01.

    The two records are read by their readers (``hierbench._base.fit_checks`` and ``fit_record``),
    which refuse a malformed one (not JSON, or JSON of another type) by name: the sentence
    states a verdict, which a record read as absent would change without a word.

    Examples
    --------
    >>> import json
    >>> attrs = {"diag_thresholds": json.dumps({"r_hat": 1.01}), "diag_checks": json.dumps([
    ...     {"check": "r_hat", "value": 1.0327, "at": "ability[x]", "limit": 1.0461,
    ...      "n_elements": 121, "passed": True}])}
    >>> print(describe_r_hat(attrs | {"draws": 200, "chains": 4}))  # doctest: +NORMALIZE_WHITESPACE
    R-hat 1.033 (at ability[x]) <= 1.046, the limit at 200 draws per chain and 121 elements
    checked (the conventional 1.01, raised for the number of elements and that element's ESS
    within chains: at most 1.05, the rule in diag_checks)
    """
    held = SimpleNamespace(attrs=attrs)
    c = next((c for c in fit_checks(held) if c.get("check") == "r_hat"), None)
    if c is None or not np.isfinite(c.get("value", np.nan)):
        return f"R-hat not computed ({_no_r_hat_why(attrs, c)})"
    floor = float(fit_record(held, "diag_thresholds").get("r_hat", 1.01))
    value, lim, where = c.get("over_limit_value", c["value"]), c.get("over_limit_limit", c["limit"]), c.get(
        "over_limit_at", c["at"])  # fmt: skip
    head = f"R-hat {value:.3f} (at {where}) {'<=' if c['passed'] else '>'} {lim:.3f}"
    if lim <= floor + 5e-4:
        return f"{head}, the conventional limit"
    return (
        f"{head}, the limit at {attrs['draws']} draws per chain and {c['n_elements']} elements "
        f"checked (the conventional {floor:g}, raised for the number of elements and that element's "
        "ESS within chains: at most 1.05, the rule in diag_checks)"
    )


def _no_r_hat_why(attrs: dict[str, Any], check: dict | None) -> str:
    """Why a fit has no R-hat, as the check that failed says it (``diagnose``): the draws, the chains, or no spread."""
    if check is not None and check.get("not_checked"):
        return "an approximate fit: one chain of independent draws, which R-hat does not apply to"
    draws, chains = attrs.get("draws"), attrs.get("chains")
    if draws is not None and int(draws) < 4:
        return f"{int(draws)} draws per chain: ArviZ computes R-hat from at least 4"
    if chains is not None and int(chains) < 2:
        return "1 chain: R-hat compares chains"
    return "no element varies over draws"


def run_record(record: dict[str, Any]) -> str:
    """The start and stopping record as JSON (the fit's ``fit_run`` attr)."""
    return json.dumps(record, sort_keys=True, default=str)
