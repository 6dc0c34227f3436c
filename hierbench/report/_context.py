"""What every report section shares: the section list, readable labels, the context and skips."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchWarning
from .._base import fit_record
from ..data import grade_key

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
    # only for a battle log with the frequentist half asked for, after the abilities
    "battle-freq": "Bradley-Terry abilities: Bayesian and maximum likelihood side by side",
    "horizons": "Time horizons",  # only for a horizon fit or a log with human minutes, after the abilities
    "effects": "Effects of the formula's terms",  # only for a formula fit, after the abilities (and horizons)
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
    "mean_task": "mean success probability over the data's tasks",
    "ability": "ability (model scale)",
    "agent_effect": "agent effect (logit scale)",
    "theta": "success probability",
    "p_agent": "success probability",
    "mu": "mean success probability",
    "mean_own_tasks": "expected mean score over the tasks it ran (formula model)",
    "mean_grade_own_tasks": "expected mean grade over the tasks it ran (formula model)",
}


class ReportSectionWarning(HierbenchWarning):
    """A report section could not be computed; the report says why in that section."""


#: ``mean_new_task``'s label for a crossed fit with task clusters, whose new task comes from a new cluster
CLUSTERED_NEW_TASK = "expected score on a new task from a new task cluster"


class _Var(str):
    """A posterior variable's name that carries its own label (``_Context.var``; audit B s71, finding 4).

    A string, so that every use of the name stays as it was; ``_label`` reads ``label``.
    """

    label: str | None = None


def _label(var: str) -> str:
    own = getattr(var, "label", None)
    return own if own else LABELS.get(var, var.replace("_", " "))


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


#: a formula model's agent-level quantity in the report, by whether its family grades
MIXED_VARS = {False: "mean_own_tasks", True: "mean_grade_own_tasks"}


def _mixed_design(ctx: _Context):
    """A formula fit's design, rebuilt from its recorded formula and the report's data (None: it cannot be)."""
    from ._match import rebuilt_design

    try:
        return rebuilt_design(ctx.fit, ctx.data)
    except (KeyError, ValueError) as exc:  # HierbenchError is a ValueError
        ctx.warnings.append(f"the formula model's design could not be rebuilt from the data: {exc}")
        return None


def _mixed_agent_draws(ctx: _Context) -> xr.DataArray | None:
    """A formula model's expected score (or grade) per agent over its own tasks, draw by draw.

    :func:`hierbench.metrics.mean_response` with ``tasks="observed"`` (the task-level
    bootstrap's estimand) on the score's own scale (0-1, or grades), over ``agent``: the
    draws the abilities, rank, pairwise and side-by-side sections share. ``attrs["score_scale"]``
    says whether they are on the scale of the data's ``score`` (what the bootstrap resamples).
    """
    design = ctx.mixed_design()
    if design is None:
        return None
    from ..metrics import mean_response

    try:
        res = mean_response(ctx.fit, design, tasks="observed", prob=ctx.prob)
    except ValueError as exc:  # the fit does not match the design rebuilt (a builder's own covariate)
        ctx.warnings.append(f"the formula model's agent means could not be rebuilt from the data: {exc}")
        return None
    graded = design.family == "ordinal"
    draws = (res.draws / design.reader_scale(None)[0]).rename({"group": "agent"}).rename(MIXED_VARS[graded])
    labels = ctx.grade_labels() if graded and design.response == "score" else None
    draws.attrs = {
        # "grades 1, 2, 3, 4, 5" (the list's repr printed "[1.0, 2.0, ...]" on the figure's axis)
        "scale": f"grades {grade_key(design.categories, labels)}" if graded else "0-1",
        "score_scale": not graded and design.response == "score",
        "response": design.response,
    }
    return draws


def file_name(source: object) -> str:
    """A data source as its file name: a report travels, the folder it was read from does not."""
    from pathlib import PurePath

    text = str(source)
    return PurePath(text).name if ("/" in text or "\\" in text) else text


class _Skip(Exception):
    """A section that does not apply (the note says why)."""


#: the agents' bootstrap interval in a report (``build(bootstrap_method=...)``)
BOOTSTRAP_METHOD = "bca"


def g_interval(g, prob: float, names: list[str]) -> xr.DataArray:
    """G-theory's interval of the named components only, of the kind its ``ci`` gives (profile or Wald).

    Profiling every component of METR's six took 2.6 s, and the report reads three at most.
    """
    if g.ci_method == "profile":
        return g.profile_ci(prob, components=names)
    return g.wald_ci(prob).sel(component=names)


def checked_person_fit(data: xr.Dataset, *, prob: float = 0.95, rng=0):
    """:func:`hierbench.freq.person_fit` as the report, the demo and the CLI run it (one owner of the rule).

    Its own notices (too few replicates) are silenced, because the flag of ``misfit_agents`` is
    what those outputs say; None where it does not apply (partial credit, fewer than 3 agents).
    """
    import warnings

    from .. import freq
    from .._base import HierbenchError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return freq.person_fit(data, prob=prob, rng=rng)
    except HierbenchError:
        return None


#: the checklist's word on the run-log frequentist results in a report of battles ({keys}: those asked for)
_BATTLES_FREQ = "{ml}; the run-log results ({keys}) do not apply to battles"
#: ... and on the battles' own counterpart, by whether the report computed it (``_battle_freq``)
_BATTLES_ML = {
    True: "computed: the battles' counterpart, `hierbench.freq.fit_bradley_terry_ml` (prompt bootstrap), in the "
    f"section \"{_TITLES['battle-freq']}\"",
    False: "none: the battles' counterpart is `hierbench.freq.fit_bradley_terry_ml` (it resamples the prompts), "
    "which this report does not compute",
}


class Population(NamedTuple):
    """A model's population of task rates, toward which it pulls every task and from which its new task comes.

    ``shape``: the words in brackets after "task population" (``""``: not known for this model);
    ``noun``: the population named in full; ``short``: as "the model's {short}".
    """

    shape: str
    noun: str
    short: str


#: each model's population of task rates, keyed by the fit's ``hierbench_model`` (its one owner)
_POPULATION = {
    "crossed": Population("normal on the logit scale", "a normal population on the logit scale",
                          "normal task population"),
    "beta_binomial": Population("a beta", "a beta population of task rates per agent",
                                "beta population of task rates"),
}  # fmt: skip
_ANY_POPULATION = Population("", "its population of tasks", "task population")


def population_words(model: object) -> Population:
    """The words for the population of task rates of the fit whose ``hierbench_model`` is ``model``.

    Audit s71 review, finding 1: the crossed model's "normal on the logit scale" was said of
    beta-binomial fits too. A model not listed gets words that name no shape.
    """
    return _POPULATION.get(str(model), _ANY_POPULATION)


def most_share(k: int, n: int) -> bool:
    """Whether ``k`` of ``n`` agents on one side is "a shift most agents share" (its one owner).

    At least 3 in 4 on that side and a two-sided sign test below 0.05: a sign no fair coin would
    give (METR binarised: 9 of 11, sign test 0.065, is no claim; SWE-bench's 23 of 25 is).
    """
    from scipy.stats import binomtest

    return n > 0 and max(k, n - k) >= 0.75 * n and binomtest(k, n).pvalue < 0.05


class _Context:
    bootstrap_method = BOOTSTRAP_METHOD
    #: a battle log given as the report's data (``data`` is then None: the sections read run logs)
    battles: xr.Dataset | None = None

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
    def mixed(self) -> bool:
        """A formula-model fit (:func:`hierbench.bayes.build_mixed`): its agent levels come from metrics."""
        return self.fit is not None and self.fit.attrs.get("hierbench_model") == "mixed"

    @property
    def var(self) -> str | None:
        """The name of each agent's posterior level (a posterior variable, or a formula model's mean)."""
        if self.post is None:
            return None
        if self.mixed:  # never a random term's levels (re[1|agent]): they leave the fixed agent terms out
            draws = self.agent_draws()
            return None if draws is None else str(draws.name)
        name = _agent_var(self.post)
        if name != "mean_new_task":
            return name
        if "clustered_crossed" not in self.cache:
            self.cache["clustered_crossed"] = clustered_crossed(self.fit)
        out = _Var(name)  # a clustered crossed fit's new task comes from a new cluster: its label says so
        out.label = CLUSTERED_NEW_TASK if self.cache["clustered_crossed"] else None
        return out

    def data_summary(self) -> pd.DataFrame | None:
        """:func:`hierbench.data.summarize` of the data, one row per agent (labels as text); cached.

        The one source of the per-agent counts the sections print (``n_tasks_scored``:
        the tasks each agent's bootstrap mean averages).
        """
        if self.data is None:
            return None
        if "summary" not in self.cache:
            from ..data import summarize

            s = summarize(self.data).to_dataframe()
            s.index = s.index.astype(str)
            self.cache["summary"] = s
        return self.cache["summary"]

    def data_report(self) -> dict | None:
        """:func:`hierbench.data.read_report` of the data (cached): the Data summary and the checklist both read it."""
        if self.data is None:
            return None
        if "read_report" not in self.cache:
            from ..data import read_report

            self.cache["read_report"] = read_report(self.data)
        return self.cache["read_report"]

    def mixed_design(self):
        """The formula fit's design rebuilt from the data (cached; None when it cannot be)."""
        if "mixed_design" not in self.cache:
            self.cache["mixed_design"] = _mixed_design(self) if self.mixed and self.data is not None else None
        return self.cache["mixed_design"]

    def agent_draws(self) -> xr.DataArray | None:
        """Each agent's posterior level, draws over ``(chain, draw, agent)``: what every section ranks and compares."""
        if self.mixed:
            if "mixed_draws" not in self.cache:
                self.cache["mixed_draws"] = _mixed_agent_draws(self)
            return self.cache["mixed_draws"]
        var = self.var
        return None if var is None else self.post[var]

    def grade_labels(self) -> list[str] | None:
        """The labels of the grades 0..L-1 a ``score`` written as words was read as; None for numeric grades.

        A fit's own (``attrs["score_labels"]``, which ``hierbench fit`` saves with a graded fit of
        such a score), else the data's, for a graded formula fit of its ``score`` or no fit at all.
        """
        from ..data import labels_attr

        if "grade_labels" not in self.cache:
            labels = labels_attr(self.fit.attrs) if self.fit is not None else None
            if labels is None and self.data is not None:
                design = self.mixed_design() if self.fit is not None else None
                graded = design is not None and design.family == "ordinal" and design.response == "score"
                labels = labels_attr(self.data.attrs) if self.fit is None or graded else None
            self.cache["grade_labels"] = labels
        return self.cache["grade_labels"]

    def grade_map(self) -> tuple[float, float] | None:
        """``(first, span)`` where a graded fit grades the data's own ``score``, read from grades of its scale.

        The reader read each grade ``g`` as ``(g - first) / span``; ``first + span x score``
        undoes it, so the bootstrap of the mean score is the bootstrap of the mean grade.
        None for any other fit, or without data.
        """
        from ..data import levels_attr

        if not self.mixed or self.data is None or self.agent_draws() is None:
            return None
        design = self.mixed_design()
        levels = levels_attr(self.data.attrs)
        if design is None or design.family != "ordinal" or design.response != "score" or not levels:
            return None
        cats = np.asarray(design.categories, dtype=float)
        if cats.shape != np.shape(levels) or not np.allclose(cats, np.asarray(levels, dtype=float)):
            return None
        return float(cats[0]), float(cats[-1] - cats[0])

    def single_agent(self) -> str | None:
        """The one agent's name when the fit or the data hold a single agent (nothing to rank or pair)."""
        draws = self.agent_draws() if self.post is not None else None
        names = (draws["agent"].values if draws is not None and "agent" in draws.dims
                 else self.data["agent"].values if self.data is not None else [])  # fmt: skip
        return str(names[0]) if len(names) == 1 else None

    def score_scale(self) -> bool:
        """Whether the agents' posterior levels are on the data's score scale (the bootstrap's)."""
        draws = self.agent_draws()
        if draws is None:
            return True
        if self.mixed:
            return bool(draws.attrs["score_scale"])
        return _on_score_scale(draws, str(self.var))

    def want_freq(self, key: str) -> bool:
        """Whether the report shows the frequentist result ``key`` (one of ``_match.FREQ_RESULTS``).

        The one rule of ``build(freq=...)``: "auto" computes every result from the data; a mapping
        gives some already computed and the rest are computed as under "auto", but a key given as
        None, which leaves its result out; None leaves the frequentist half out. Never without data.
        """
        if self.data is None or self.freq is None:
            return False
        return not isinstance(self.freq, Mapping) or key not in self.freq or self.freq[key] is not None

    def freq_result(self, key: str, compute):
        """The frequentist result ``key``, once: the one ``freq`` gives, else ``compute()`` where wanted.

        ``build`` checked a given result against the data and the level (``_match.check_freq``).
        Records where each came from (``cache["freq_source"]``), which ``freq_sources`` says.
        """
        if key not in self.cache:
            source = self.cache.setdefault("freq_source", {})
            if isinstance(self.freq, Mapping) and self.freq.get(key) is not None:
                self.cache[key], source[key] = self.freq[key], "given"
            elif not self.want_freq(key):
                # no run log is not a choice the caller made (was: "given as None in `freq`" for every battle report)
                how = "battles" if self.battles is not None else "no data" if self.data is None else "left out"
                self.cache[key], source[key] = None, how
            else:
                self.cache[key] = compute()
                source[key] = "computed from the data" if self.cache[key] is not None else "not applicable"
        return self.cache[key]

    def quoted_once(self, key: str, compute, errors: tuple[type[Exception], ...]) -> tuple:
        """``(compute() or the error of ``errors`` it raised, its warnings as "Name: message")``, once.

        Each warning is raised again the first time, so that the report's list of warnings
        (the section's record) has it too; the section quotes the messages beside its result.
        """
        if key not in self.cache:
            import warnings

            from .._base import OUTSIDE_PACKAGE

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    res = compute()
                except errors as exc:  # said in the section, in its own words
                    res = exc
            self.cache[key] = (res, list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)))
            for w in caught:
                warnings.warn(w.message, w.category, stacklevel=3, skip_file_prefixes=OUTSIDE_PACKAGE)
        return self.cache[key]

    def left_out(self, key: str) -> str:
        """Why the result ``key`` is left out, in the call's words: ``freq=None``, or the key given as None."""
        return "freq=None" if self.freq is None else f"`freq[{key!r}]` is None"

    def given(self, key: str) -> bool:
        """Whether the result ``key`` the report shows is the one ``freq`` gave (not computed here)."""
        return self.cache.get("freq_source", {}).get(key) == "given"

    def freq_sources(self) -> str:
        """Which frequentist results the report was given (``freq``) and which it computed, in words."""
        source = dict(self.cache.get("freq_source", {}))
        if isinstance(self.freq, Mapping):  # a key given as None is left out even where no section asked for it
            source |= {k: "left out" for k, v in self.freq.items() if v is None}
        by: dict[str, list[str]] = {}
        for key, how in source.items():
            by.setdefault(how, []).append(key)
        order = ("given", "computed from the data", "left out", "not applicable", "no data", "battles")
        words = {"given": "given in `freq`", "left out": "left out (given as None in `freq`)",
                 "no data": "not computed (no data given)"}  # fmt: skip
        got = self.cache.get("battle_ml")  # (result or the exception it raised, its warnings): _battle_freq
        ml = _BATTLES_ML[got is not None and not isinstance(got[0], Exception)]
        return "; ".join(_BATTLES_FREQ.format(keys=", ".join(by[h]), ml=ml) if h == "battles"
                         else f"{words.get(h, h)}: {', '.join(by[h])}" for h in order if h in by)  # fmt: skip

    def ran(self) -> pd.DataFrame | None:
        """Which agent ran which task (``_pair_rows.ran_matrix`` of the fit and data), once: the ranks and pairs read it."""
        if "ran" not in self.cache:
            from ._pair_rows import ran_matrix

            self.cache["ran"] = ran_matrix(self.fit, self.data)
        return self.cache["ran"]

    def binary(self) -> bool:
        if self.data is None:
            return False
        from .._base import is_binary

        return is_binary(self.data["score"].values)

    def gtheory(self):
        """G-theory's variance components of the data (``freq["variance"]`` where given), once.

        Computed at the report's level, its warnings kept; raises what
        :func:`hierbench.freq.variance_components` raised, every time it is asked, and a
        ``ValueError`` where the result is left out (``freq=None``, or given as None).
        """
        g = self.freq_result("variance", self._gtheory)
        if g is None:
            raise ValueError(f"G-theory was left out ({self.left_out('variance')})")
        if isinstance(g, Exception):
            raise g
        return g

    def _gtheory(self):
        """:func:`hierbench.freq.variance_components` of the data, design from the data; what it raised kept."""
        import warnings

        from .. import freq

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = freq.variance_components(self.data, prob=self.prob)
            except Exception as exc:  # said where it is used (the variance section names it)
                res = exc
        self.warnings += [f"G-theory: {w.message}" for w in caught]
        return res

    def person_fit(self):
        """:func:`checked_person_fit` of the data (``freq["person_fit"]`` where given); None where it does not apply."""
        return self.freq_result(
            "person_fit", lambda: checked_person_fit(self.data, prob=self.prob, rng=self.rng) if self.binary() else None
        )

    def bootstrap(self):
        """The task-level bootstrap of each agent's mean score (``freq["bootstrap"]`` where given)."""
        return self.freq_result("bootstrap", self._bootstrap)

    def _bootstrap(self):
        from .. import freq

        self.say(f"task-level bootstrap, {self.n_resamples} resamples")
        return freq.bootstrap_ci(
            self.data, method=self.bootstrap_method, n_resamples=self.n_resamples, prob=self.prob, rng=self.rng
        )

    def bayes_frame(self) -> pd.DataFrame | None:
        """Each agent's posterior mean and interval of :meth:`agent_draws`."""
        draws = self.agent_draws()
        return None if draws is None else _eti(draws, self.prob)


def _clustered_model(fit: xr.DataTree) -> str:
    """The fit's model name if it was fitted with task clusters, else ``""``."""
    spec = fit_record(fit, "hierbench_spec")
    return str(spec.get("model", "")) if spec.get("options", {}).get("clusters") else ""


def clustered_crossed(fit: xr.DataTree) -> bool:
    """Whether the fit is a crossed model with task clusters (a new task comes from a new cluster)."""
    return _clustered_model(fit) == "crossed"
