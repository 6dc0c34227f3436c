"""What adaptive selection and its replays share: one agent's posterior over (item draw x ability), log replay.

:class:`_Posterior` holds weights over (item-parameter draw x ability grid
point) for one agent and updates them cell by cell; it gives the selection
criteria, the running moments and interval of the realised full-benchmark
score, and each task's posterior predictive mean and variance (what the
model-assisted estimators use as predictions and to tilt their sampling).
:class:`_Replay` serves one agent's complete logs as a ``run`` callback.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit
from scipy.special import ndtr

from .._base import HierbenchError
from .._base import counts
from ..freq import IRTBank
from ..freq import cell_loglik

#: relative weight below which a (draw, ability) row is dropped from the adaptive computations
_PRUNE = 1e-10


def _check_bank(bank: Any) -> IRTBank:
    if not isinstance(bank, IRTBank):
        raise TypeError(
            f"`bank` must be an IRTBank (hierbench.freq.fit_irt_ml(...).bank or "
            f"IRTBank.from_posterior(fit)); got {type(bank).__name__}"
        )
    return bank


class _Replay:
    """A callback serving one agent's complete logs: each call to a task returns its next run."""

    def __init__(self, logs: xr.DataArray | xr.Dataset, bank: IRTBank):
        if isinstance(logs, xr.Dataset):
            if "score" not in logs:
                raise HierbenchError(f"`run` logs must hold `score`; got {list(logs.data_vars)}")
            logs = logs["score"]
        if "agent" in logs.dims:
            if logs.sizes["agent"] != 1:
                raise HierbenchError(f"`run` logs must hold one agent; got {logs.sizes['agent']}")
            logs = logs.isel(agent=0, drop=True)
        if "run" not in logs.dims:
            logs = logs.expand_dims(run=[0])
        if set(logs.dims) != {"task", "run"}:
            raise HierbenchError(f"`run` logs must have dims ('task', 'run'); got {logs.dims}")
        counts(logs, name="run", purpose="adaptive replay")  # binary check, names offending cells
        logs = logs.transpose("task", "run")
        labels = np.asarray(logs["task"].values).astype(str)
        bank._index(labels, name="`run` logs' tasks")
        self.values = {t: v[np.isfinite(v)] for t, v in zip(labels, logs.values.astype(float), strict=True)}
        self.used = dict.fromkeys(labels, 0)

    def available(self, task: str) -> int:
        return int(self.values.get(task, np.array([])).size - self.used.get(task, 0))

    def __call__(self, task: str) -> float:
        i = self.used[task]
        self.used[task] = i + 1
        return float(self.values[task][i])


class _Posterior:
    """Weights over (item-parameter draw x ability grid point) for one agent.

    Rows whose weight has fallen below ``_PRUNE`` times the largest are left
    out of the criterion and the interval (their total mass is below
    ``rows * _PRUNE`` of the largest row's, negligible at 1e-10).
    """

    def __init__(self, bank: IRTBank, n_draws: int, n_grid: int, gen: np.random.Generator, n_runs: int = 1):
        b = bank.thin(n_draws, gen)
        # runs correlated within a cell (fit_irt_ml's run_icc): an observed cell is
        # beta-binomial (cell_loglik), and a task not run contributes the variance of a
        # mean of n_runs correlated runs, p (1 - p) (1 + (n_runs - 1) icc) / n_runs
        self.icc = float(bank.attrs.get("run_icc", 0.0))
        a = b.discrimination.values
        d = b.intercept.values
        grid = np.linspace(-5.0, 5.0, n_grid)
        S, T = a.shape
        self.T = T
        eta = (a[:, None, :] * grid[None, :, None] + d[:, None, :]).reshape(S * n_grid, T)
        self.eta = eta
        self.P = expit(eta)
        self.V = self.P * (1 - self.P) * (1 + (n_runs - 1) * self.icc) / n_runs  # variance of a task's rate
        self.Q = (np.repeat(a, n_grid, axis=0) ** 2) * self.V  # Fisher information
        self.P2 = self.P * self.P
        lw = np.tile(-0.5 * grid**2, S)
        self.logw = lw - lw.max()
        self.unrun = np.ones(T, bool)  # tasks not run at all
        self.known = 0.0  # sum over run tasks of their observed success rate
        self.ptot = self.P.sum(1)  # sum over unrun tasks of p
        self.vtot = self.V.sum(1)  # sum over unrun tasks of their rate's variance

    def weights(self) -> np.ndarray:
        w = np.exp(self.logw - self.logw.max())
        return w / w.sum()

    def _active(self) -> tuple[np.ndarray, np.ndarray]:
        w = self.weights()
        rows = np.flatnonzero(w > _PRUNE * w.max())
        wa = w[rows]
        return rows, wa / wa.sum()

    def _rows(self) -> tuple[np.ndarray | slice, np.ndarray]:
        """Active rows and their weights, or every row (zero-padded) when most are active."""
        rows, w = self._active()
        if rows.size > 0.25 * self.P.shape[0]:  # a zero-padded product beats copying most rows
            wf = np.zeros(self.P.shape[0])
            wf[rows] = w
            return slice(None), wf
        return rows, w

    def predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """Each task's posterior predictive mean and variance of its success rate (over ``n_runs`` runs)."""
        if not hasattr(self, "_VP2"):
            self._VP2 = self.V + self.P2
        rows, w = self._rows()
        m = w @ self.P[rows]
        return m, np.maximum(w @ self._VP2[rows] - m * m, 1e-12)

    def outcome_pmf(self, t: int, n: int) -> np.ndarray:
        """Predictive probabilities of 0..n successes in ``n`` runs of task ``t`` (beta-binomial rows when ``icc > 0``)."""
        from scipy.special import comb
        from scipy.stats import betabinom

        rows, w = self._active()
        p = self.P[rows, t][:, None]
        k = np.arange(n + 1)[None, :]
        if self.icc > 0 and n > 1:
            c = 1.0 / self.icc - 1.0
            f = betabinom.pmf(k, n, np.maximum(p * c, 1e-12), np.maximum((1 - p) * c, 1e-12))
        else:
            f = comb(n, k) * p**k * (1 - p) ** (n - k)
        return w @ f

    def observe(self, t: int, k: int, n: int) -> None:
        self.logw = self.logw + cell_loglik(self.eta[:, t], k, n, self.icc)
        if self.unrun[t]:
            self.unrun[t] = False
            self.ptot = self.ptot - self.P[:, t]
            self.vtot = self.vtot - self.V[:, t]

    def criterion(self, kind: str) -> np.ndarray:
        rows, w = self._rows()
        if kind == "fisher":
            return w @ self.Q[rows]
        P = self.P[rows]
        q, A = np.stack([w, w * self.ptot[rows]]) @ P
        C = w @ self.P2[rows]
        Ep = float(w @ self.ptot[rows])
        q = np.clip(q, 1e-12, 1 - 1e-12)
        m1 = 1.0 + (A - C) / q
        m0 = (Ep - q - A + C) / (1 - q)
        return q * (1 - q) * (m1 - m0) ** 2

    def moments(self, known: float, misfit_sd: float = 0.0) -> tuple[float, float]:
        """Mean and sd of the realised score (with the misfit variance)."""
        rows, w = self._active()
        m = (known + self.ptot[rows]) / self.T
        v = np.maximum(self.vtot[rows], 0.0) / self.T**2 + misfit_sd**2
        mean = float(w @ m)
        return mean, float(np.sqrt(w @ v + w @ (m - mean) ** 2))

    def interval(self, known: float, prob: float, misfit_sd: float = 0.0) -> tuple[float, float, float, float]:
        """Mean, equal-tailed interval and sd of the realised score (normal per mixture component).

        ``misfit_sd`` (score units) is added in quadrature to every
        component's sd: the model-misfit variance of :func:`calibrate_misfit`.
        The quantiles are found on three rounds of a 64-point grid, both
        tails at once in the first (resolution: range / 64 / 32^2).
        """
        mean, sd_tot = self.moments(known, misfit_sd)
        rows, w = self._active()
        m = (known + self.ptot[rows]) / self.T
        sd = np.sqrt(np.maximum(np.maximum(self.vtot[rows], 0.0) / self.T**2 + misfit_sd**2, 1e-18))
        targets = np.array([(1 - prob) / 2, (1 + prob) / 2])
        x = np.linspace(float((m - 6 * sd).min()), float((m + 6 * sd).max()), 64)
        brackets = []
        cdf = w @ ndtr((x[None, :] - m[:, None]) / sd[:, None])
        for tg in targets:
            i = int(np.searchsorted(cdf, tg))
            brackets.append((x[max(i - 1, 0)], x[min(i, 63)]))
        for _ in range(2):
            xs = np.concatenate([np.linspace(lo, hi, 32) for lo, hi in brackets])
            cdf = w @ ndtr((xs[None, :] - m[:, None]) / sd[:, None])
            new = []
            for r, tg in enumerate(targets):
                xr_, cr = xs[32 * r:32 * (r + 1)], cdf[32 * r:32 * (r + 1)]
                i = int(np.searchsorted(cr, tg))
                new.append((xr_[max(i - 1, 0)], xr_[min(i, 31)]))
            brackets = new
        return mean, 0.5 * sum(brackets[0]), 0.5 * sum(brackets[1]), sd_tot


def _check_complete(c: xr.Dataset, purpose: str) -> None:
    """Refuse logs with unrun cells, naming the agents and tasks short of complete and the way out."""
    n = c["n_runs"].transpose("agent", "task")
    miss = n == 0
    if not bool(miss.any()):
        return
    agents = np.asarray(c["agent"].values).astype(str)
    tasks = np.asarray(c["task"].values).astype(str)
    per_agent = miss.sum("task").values
    per_task = miss.sum("agent").values
    short = ", ".join(f"{str(a)!r} ({int(k)} unrun)" for a, k in zip(agents, per_agent, strict=True) if k)
    complete = agents[per_agent == 0]
    hint = (
        f"data.sel(agent=[...]) with the {complete.size} complete agents (e.g. {complete.tolist()[:4]}) "
        "makes a complete log"
        if complete.size >= 3
        else f"data.sel(task=...) without the {int((per_task > 0).sum())} tasks some agent did not run "
        f"(e.g. {tasks[per_task > 0][:5].tolist()})"
    )
    raise HierbenchError(
        f"`data` must be complete logs (every agent ran every task at least once) {purpose}; "
        f"{int(miss.sum())} cells were not run, by {short}. Each held-out agent's full score is its mean "
        f"over all tasks, which unrun cells would leave undefined. {hint}"
    )
