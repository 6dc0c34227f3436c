"""The calibrated item bank: draws of each task's item parameters, from a Laplace or a NUTS fit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from ..._base import HierbenchError
from ..._base import NotConvergedWarning
from ..._base import as_rng
from ..._base import check_int
from ..._base import json_ready
from ..._base import warn_user

__all__ = ["IRTBank"]


class IRTConvergenceWarning(NotConvergedWarning):
    """The MAP optimiser or the empirical-Bayes iterations stopped before converging, or the slopes collapsed."""


#: the attrs of a saved bank (:meth:`IRTBank.to_dataset`) that are its own fields, not its ``attrs``
_OWN_ATTRS = ("method", "model")

#: how a message names a bank whose slopes collapsed: the attr that records it, and what it means
SLOPES_COLLAPSED_WORDS = "bank.attrs['slopes_collapsed'] = 1: every discrimination ~0"


@dataclass(frozen=True, repr=False)
class IRTBank:
    """A calibrated item bank: draws of each task's item parameters.

    Attributes
    ----------
    discrimination, intercept : xarray.DataArray
        Draws over (``sample``, ``task``): ``logit p = discrimination *
        ability + intercept``, abilities in units of the calibration agents'
        sd (mean 0, sd 1).
    method : str
        How the draws were made (``"nuts"`` or ``"laplace"``).
    model : str
        ``"2pl"`` or ``"1pl"``.
    attrs : dict
        What the calibration recorded (agents, run correlation, fit, ...).
        A bank whose slopes collapsed (``slopes_collapsed``) is refused by
        ``irt_score``, ``adaptive`` and ``anchors`` (``check_usable``); the
        assisted estimates use its population-average predictions instead.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> bank = IRTBank(xr.DataArray(np.ones((2, 3)), dims=("sample", "task")),
    ...                xr.DataArray(np.zeros((2, 3)), dims=("sample", "task")))
    >>> bank.n_tasks, bank.n_samples
    (3, 2)
    """

    discrimination: xr.DataArray
    intercept: xr.DataArray
    method: str = "given"
    model: str = "2pl"
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for nm in ("discrimination", "intercept"):
            da = getattr(self, nm)
            if not isinstance(da, xr.DataArray) or set(da.dims) != {"sample", "task"}:
                raise HierbenchError(f"`{nm}` must be a DataArray with dims ('sample', 'task')")
        a = self.discrimination.transpose("sample", "task")
        d = self.intercept.transpose("sample", "task")
        if a.shape != d.shape:
            raise HierbenchError(
                f"`discrimination` and `intercept` must have the same shape; got {a.shape} and {d.shape}"
            )
        if not (np.isfinite(a.values).all() and np.isfinite(d.values).all()):
            raise HierbenchError("an IRT bank's item parameters must all be finite")
        if (a.values <= 0).any():
            raise HierbenchError(
                f"`discrimination` must be positive (the reflection constraint); got min {float(a.min()):.3g}"
            )
        if "task" not in a.coords:
            a = a.assign_coords(task=np.arange(a.sizes["task"]).astype(str))
        d = d.assign_coords(task=a["task"].values)
        object.__setattr__(self, "discrimination", a)
        object.__setattr__(self, "intercept", d)

    def __repr__(self) -> str:
        """What the bank is, its size and the spread of its items; the draws stay in the attributes."""
        b = self.difficulty.mean("sample").values
        a = self.discrimination.mean("sample").values
        who = f", calibrated on {self.attrs['n_agents']} agents" if "n_agents" in self.attrs else ""
        lines = [
            f"IRTBank: {self.model.upper()} item bank, {self.n_tasks} tasks x {self.n_samples} draws "
            f"of the item parameters ({self.method}{who})",
            f"  difficulty (posterior mean): median {np.median(b):.3g}, range [{b.min():.3g}, {b.max():.3g}]",
            f"  discrimination (posterior mean): median {np.median(a):.3g}, range [{a.min():.3g}, {a.max():.3g}]",
        ]
        if self.attrs.get("fit"):  # what the draws are around (fit_irt_ml: a penalised mode, not ML)
            lines.append(f"  fit: {self.attrs['fit']}")
        if self.attrs.get("convergence", "passed") != "passed":  # a NUTS fit that failed or was not checked
            lines.append(f"  convergence of the fit: {self.attrs['convergence']}")
        if float(self.attrs.get("run_icc", 0.0)) > 0:
            lines.append(f"  run_icc {float(self.attrs['run_icc']):.3g} (correlation of an agent's runs on a task)")
        return "\n".join(lines)

    @property
    def tasks(self) -> np.ndarray:
        """Task labels (strings)."""
        return np.asarray(self.discrimination["task"].values).astype(str)

    @property
    def n_tasks(self) -> int:
        return int(self.discrimination.sizes["task"])

    @property
    def n_samples(self) -> int:
        return int(self.discrimination.sizes["sample"])

    @property
    def difficulty(self) -> xr.DataArray:
        """Draws of ``b_t = -d_t / a_t``: the ability at which success has probability 1/2."""
        return (-self.intercept / self.discrimination).rename("difficulty")

    @property
    def slopes_collapsed(self) -> bool:
        """Whether its calibration found every discrimination collapsed to ~0 (``attrs["slopes_collapsed"]``).

        :func:`hierbench.freq.fit_irt_ml` records it as 0 / 1, so a bank saved and loaded
        (a numpy integer, a one-element array) reads the same; False where it is not
        recorded (a NUTS or a given bank).
        """
        if "slopes_collapsed" not in self.attrs:
            return False
        v = np.asarray(self.attrs["slopes_collapsed"]).reshape(-1)
        if v.size != 1 or v.dtype.kind not in "biu" or int(v[0]) not in (0, 1):
            raise HierbenchError(
                f"bank.attrs['slopes_collapsed'] must be 0 or 1 (as fit_irt_ml records it); "
                f"got {self.attrs['slopes_collapsed']!r}"
            )
        return bool(v[0])

    def check_usable(self, purpose: str, *, fallback: str | None = None) -> bool:
        """Whether the bank's item curves can serve ``purpose``: True, unless its slopes collapsed.

        A bank whose slopes collapsed (``slopes_collapsed``) has flat item
        curves: no task tells one agent's ability from another's. Then, without
        a ``fallback``, a :class:`hierbench.HierbenchError` saying ``purpose``
        (what could not be done, and why), the attr, the agents the bank was
        calibrated on and how to recalibrate; with one (what the caller does
        instead), the same words and the fallback are warned as
        :class:`hierbench.freq.IRTConvergenceWarning` and False is returned.
        """
        if not self.slopes_collapsed:
            return True
        on = f" on {int(self.attrs['n_agents'])} agents" if "n_agents" in self.attrs else ""
        how = ("on more agents, with model='1pl' (one discrimination shared by every task), or with fixed "
               "hyperparameters (fit_irt_ml(data, hyper={'mu_d': .., 'sd_d': .., 'mu_la': .., 'sd_la': ..}))"
               if self.model == "2pl" else "on more agents, whose scores differ")
        msg = (f"{purpose}. The bank's slopes collapsed (bank.attrs['slopes_collapsed'] = 1: at the mode of its "
               f"calibration{on} every discrimination was ~0), so its item curves are flat and no task tells one "
               f"agent's ability from another's. Recalibrate it {how}")
        if fallback is None:
            raise HierbenchError(msg)
        warn_user(f"{msg}. {fallback}", IRTConvergenceWarning)
        return False

    def point(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior means of (discrimination, intercept), each of shape (task,)."""
        return self.discrimination.mean("sample").values, self.intercept.mean("sample").values

    def subset(self, tasks: Any) -> IRTBank:
        """The bank restricted to ``tasks`` (labels)."""
        idx = self._index(tasks)
        return IRTBank(
            self.discrimination.isel(task=idx), self.intercept.isel(task=idx), self.method, self.model, dict(self.attrs)
        )

    def thin(self, n: int, rng: None | int | np.random.Generator = None) -> IRTBank:
        """``n`` draws picked at random without replacement (all of them when n >= n_samples).

        ``rng``: an int seed, a Generator, or None for fresh entropy.
        """
        n = check_int(n, "n", min=1)
        if n >= self.n_samples:
            return self
        idx = np.sort(as_rng(rng).choice(self.n_samples, size=n, replace=False))
        return IRTBank(
            self.discrimination.isel(sample=idx), self.intercept.isel(sample=idx), self.method, self.model, dict(self.attrs)
        )

    def _index(self, tasks: Any, name: str = "tasks") -> np.ndarray:
        labels = np.asarray(tasks).astype(str).ravel()
        pos = {t: i for i, t in enumerate(self.tasks)}
        unknown = [t for t in labels if t not in pos]
        if unknown:
            raise HierbenchError(
                f"`{name}` must be tasks of the bank; {len(unknown)} are not, e.g. {unknown[:5]}"
            )
        return np.array([pos[t] for t in labels], dtype=np.intp)

    def to_dataset(self) -> xr.Dataset:
        """The bank as a Dataset (for :func:`hierbench.io.save_dataset`); :meth:`from_dataset` reads it back.

        ``discrimination`` and ``intercept`` over ``(sample, task)``; attrs
        ``method``, ``model`` and, beside them, what the calibration recorded
        (``attrs``, as plain values; a key named ``method`` or ``model`` as
        ``attrs_method``, ``attrs_model``).

        Examples
        --------
        >>> bank = IRTBank(xr.DataArray(np.ones((2, 3)), dims=("sample", "task")),
        ...                xr.DataArray(np.zeros((2, 3)), dims=("sample", "task")), attrs={"n_agents": 4})
        >>> IRTBank.from_dataset(bank.to_dataset()).attrs
        {'n_agents': 4}
        """
        own = {(f"attrs_{k}" if k in _OWN_ATTRS else k): v for k, v in json_ready(self.attrs).items()}
        return xr.Dataset(
            {"discrimination": self.discrimination, "intercept": self.intercept},
            attrs={"method": self.method, "model": self.model, **own},
        )

    @classmethod
    def from_dataset(cls, ds: xr.Dataset, *, prefix: str = "") -> IRTBank:
        """The bank :meth:`to_dataset` wrote, from ``ds`` (e.g. read with :func:`hierbench.io.load_dataset`).

        With ``prefix="bank"``, the bank a saved :class:`hierbench.freq.IRTCalibrationResult`
        holds (its variables ``bank_discrimination``, ``bank_intercept`` and attrs ``bank_<attr>``).
        """
        if not isinstance(ds, xr.Dataset):
            raise HierbenchError(f"`ds` must be an xarray.Dataset; got {type(ds).__name__}")
        lead = f"{prefix}_" if prefix else ""
        attrs = {k[len(lead):]: v for k, v in ds.attrs.items() if k.startswith(lead)}
        missing = [f"{lead}{v}" for v in ("discrimination", "intercept") if f"{lead}{v}" not in ds.data_vars]
        missing += [f"the attr {lead}{a}" for a in _OWN_ATTRS if a not in attrs]
        if missing:
            raise HierbenchError(
                f"`ds` must hold a bank as IRTBank.to_dataset writes it (prefix {prefix!r}); it lacks "
                f"{', '.join(missing)}"
            )
        method, model = (str(attrs.pop(a)) for a in _OWN_ATTRS)
        attrs = {(k.removeprefix("attrs_") if k.removeprefix("attrs_") in _OWN_ATTRS else k): v for k, v in attrs.items()}
        back = {f"{lead}{d}": d for d in ("sample", "task")}

        def read(v: str) -> xr.DataArray:
            da = ds[f"{lead}{v}"]
            return da.rename({k: d for k, d in back.items() if k in da.dims and k != d}).drop_attrs()

        return cls(read("discrimination"), read("intercept"), method, model, attrs)

    @classmethod
    def from_posterior(cls, fit: xr.DataTree | xr.Dataset, *, model: str | None = None) -> IRTBank:
        """A bank from a NUTS fit of :func:`hierbench.bayes.build_irt_2pl` (chains x draws become ``sample``).

        A fit that failed hierbench's convergence checks (root attr ``diag_converged`` 0, as
        :func:`hierbench.bayes.fit` records them) is accepted with a
        :class:`hierbench.NotConvergedWarning` naming the failed checks (the class
        :class:`hierbench.bayes.ConvergenceWarning` derives from). The bank's
        ``attrs["convergence"]`` records the verdict (``"passed"``, ``"failed: ..."``, or
        ``"not checked: ..."`` for a fit without diagnostics), and its repr shows any but a pass;
        ``attrs["ability_range"]`` the calibration agents' posterior-mean abilities' range
        (where the fit has ``ability``).
        """
        post = fit["posterior"].to_dataset() if isinstance(fit, xr.DataTree) else fit
        for v in ("discrimination", "intercept"):
            if v not in post:
                raise HierbenchError(
                    f"`fit` must be a fit of build_irt (posterior variables 'discrimination' and "
                    f"'intercept'); {v!r} is missing (has {sorted(post.data_vars)[:8]})"
                )
        def flat(da: xr.DataArray) -> xr.DataArray:
            if "task" not in da.dims:  # the 1PL keeps one shared discrimination
                da = da.expand_dims(task=post["task"].values).transpose(..., "task")
            st = da.stack(sample=("chain", "draw")).transpose("sample", "task")
            return xr.DataArray(st.values, dims=("sample", "task"), coords={"task": np.asarray(post["task"].values).astype(str)})

        attrs = dict(getattr(fit, "attrs", {}))
        mdl = model or ("1pl" if post["discrimination"].ndim == 2 else "2pl")
        kept = {k: v for k, v in attrs.items() if isinstance(v, (str, int, float))}
        kept["convergence"] = _convergence(attrs)
        if "ability" in post:  # the calibration agents' (posterior mean) abilities: adaptive's extrapolation flag
            mean = post["ability"].mean([d for d in ("chain", "draw") if d in post["ability"].dims])
            kept["ability_range"] = [float(mean.min()), float(mean.max())]
        return cls(flat(post["discrimination"]), flat(post["intercept"]), "nuts", mdl, kept)


def _convergence(attrs: dict[str, Any]) -> str:
    """The fit's convergence verdict for the bank's attrs; a failed fit warns, naming its failed checks."""
    if "diag_converged" not in attrs:
        return ("not checked: the fit carries no convergence diagnostics (diag_converged); "
                "hierbench.bayes.compute_diagnostics computes them")
    if int(attrs["diag_converged"]):
        return "passed"
    try:
        failures = [str(f) for f in json.loads(attrs.get("diag_failures", "[]"))]
    except (TypeError, ValueError):
        failures = [str(attrs.get("diag_failures"))]
    failed = "; ".join(failures) or "diag_converged is 0"
    # NotConvergedWarning, the package's class for convergence: hierbench.bayes.ConvergenceWarning (which the
    # fit itself warned with) derives from it, and freq may not import bayes (ARCHITECTURE.md)
    warn_user(
        f"IRTBank.from_posterior: the fit failed hierbench's convergence checks ({failed}). The bank is "
        "built from its draws as asked, but they may not represent the posterior: refit (more tuning or "
        "draws) before scoring agents with it; the verdict is kept in bank.attrs['convergence']",
        NotConvergedWarning,
    )
    return f"failed: {failed}"
