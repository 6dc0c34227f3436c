"""What every report section shares: the section list, readable labels, the context and skips."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchWarning

__all__ = ["SECTIONS", "ReportSectionWarning"]

#: Section ids of a full report, in order (the HTML anchors).
SECTIONS: tuple[str, ...] = (
    "data-summary",
    "convergence",
    "abilities",
    "pass-k",
    "ranks",
    "pairwise",
    "variance",
    "ppc",
    "side-by-side",
    "checklist",
)


_TITLES = {
    "data-summary": "Data summary",
    "convergence": "Convergence diagnostics",
    "abilities": "Agent abilities",
    "pass-k": "Reliability: pass^k",
    "ranks": "Rank probabilities",
    "pairwise": "Does A beat B? Pairwise probabilities and paired tests",
    "variance": "Variance components",
    "ppc": "Posterior predictive checks",
    "side-by-side": "Bayesian and frequentist side by side",
    "checklist": "Reporting checklist",
    "subset-estimates": "Subset estimates",  # only with build(subset=...), before the checklist
}


#: Readable names of posterior variables and their scale (used on axes and in tables).
LABELS: dict[str, str] = {
    "mean_new_task": "expected score on a new task from the task population",
    "mean_observed": "mean score over this benchmark's tasks",
    "ability": "ability (model scale)",
    "agent_effect": "agent effect (logit scale)",
    "theta": "success probability",
    "p_agent": "success probability",
    "mu": "mean success probability",
}


class ReportSectionWarning(HierbenchWarning):
    """A report section could not be computed; the report says why in that section."""


def _label(var: str) -> str:
    return LABELS.get(var, var.replace("_", " "))


def _agent_var(post: xr.Dataset) -> str | None:
    """The posterior variable that states each agent's level, preferring the score scale."""
    for name in ("mean_new_task", "p_agent", "theta", "mu", "ability"):
        if name in post and set(post[name].dims) == {"chain", "draw", "agent"}:
            return name
    for name, da in post.data_vars.items():
        if set(da.dims) == {"chain", "draw", "agent"}:
            return str(name)
    return None


def _on_score_scale(da: xr.DataArray, name: str) -> bool:
    if name in ("ability", "agent_effect"):
        return False
    v = da.values
    return bool(np.nanmin(v) >= 0 and np.nanmax(v) <= 1)


def _eti(da: xr.DataArray, prob: float) -> pd.DataFrame:
    """Posterior mean and equal-tailed interval per agent, as estimate / lower / upper."""
    q = da.quantile([(1 - prob) / 2, (1 + prob) / 2], dim=("chain", "draw"))
    return pd.DataFrame(
        {
            "estimate": da.mean(("chain", "draw")).to_series(),
            "lower": q.isel(quantile=0, drop=True).to_series(),
            "upper": q.isel(quantile=1, drop=True).to_series(),
        }
    )


def _mixed_frame(ctx: _Context) -> pd.DataFrame | None:
    """A formula model's expected score per agent over its own tasks, on the score scale.

    :func:`hierbench.metrics.mean_response` with ``tasks="observed"`` (the task-level
    bootstrap's estimand), its design rebuilt from the fit's recorded formula and the
    report's data (the report has already matched the two). None when the fit is not a
    formula model or its design cannot be rebuilt from the data alone (the horizon model
    adds a covariate of its own); the section then says so.
    """
    import json

    if ctx.fit is None or ctx.data is None or ctx.fit.attrs.get("hierbench_model") != "mixed":
        return None
    from ..data import model_design
    from ..metrics import mean_response

    opts = json.loads(ctx.fit.attrs.get("hierbench_spec", "{}")).get("options", {})
    try:
        design = model_design(opts["formula"], ctx.data, family=opts["family"], levels=opts.get("levels"))
        res = mean_response(ctx.fit, design, tasks="observed", prob=ctx.prob)
    except (KeyError, ValueError) as exc:  # HierbenchError is a ValueError
        ctx.warnings.append(f"the formula model's agent means could not be rebuilt from the data: {exc}")
        return None
    factor, _ = design.reader_scale(None)
    draws = res.draws / factor
    dim = next(d for d in draws.dims if d not in ("chain", "draw"))
    return _eti(draws.rename({dim: "agent"}) if dim != "agent" else draws, ctx.prob)


class _Skip(Exception):
    """A section that does not apply (the note says why)."""


class _Context:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.warnings: list[str] = []
        self.cache: dict[str, object] = {}

    @property
    def post(self) -> xr.Dataset | None:
        if self.fit is None or "posterior" not in self.fit.children:
            return None
        if "post" not in self.cache:
            self.cache["post"] = self.fit["posterior"].to_dataset()
        return self.cache["post"]

    @property
    def var(self) -> str | None:
        return None if self.post is None else _agent_var(self.post)

    def want_freq(self, key: str) -> bool:
        if self.data is None or self.freq is None:
            return False
        return self.freq == "auto" or (isinstance(self.freq, Mapping) and key in self.freq)

    def binary(self) -> bool:
        if self.data is None:
            return False
        from .._base import is_binary

        return is_binary(self.data["score"].values)

    def bootstrap(self):
        if "bootstrap" not in self.cache:
            if isinstance(self.freq, Mapping) and "bootstrap" in self.freq:
                self.cache["bootstrap"] = self.freq["bootstrap"]
            elif self.want_freq("bootstrap"):
                from .. import freq

                self.say(f"task-level bootstrap, {self.n_resamples} resamples")
                self.cache["bootstrap"] = freq.bootstrap_ci(
                    self.data,
                    method="bca",
                    n_resamples=self.n_resamples,
                    prob=self.prob,
                    rng=self.rng,
                )
            else:
                self.cache["bootstrap"] = None
        return self.cache["bootstrap"]

    def bayes_frame(self) -> pd.DataFrame | None:
        """Each agent's posterior level on the score scale: a posterior variable, or a formula model's mean."""
        if self.var is not None:
            return _eti(self.post[self.var], self.prob)
        if "mixed_frame" not in self.cache:
            self.cache["mixed_frame"] = _mixed_frame(self)
        return self.cache["mixed_frame"]

