"""Bradley-Terry model for pairwise outcomes (arena battles or head-to-head results).

For an ordered pair (a, b), with ``a`` in the first position,

    d_ab = ability_a - ability_b (+ home, with a first-position advantage)

and, with Davidson (1970) ties, the outcome probabilities are

    P(a wins) = e^{d/2} / Z,   P(tie) = nu / Z,   P(b wins) = e^{-d/2} / Z,
    Z = e^{d/2} + nu + e^{-d/2},

which without ties (nu = 0) is the logistic Bradley-Terry model
``P(a wins) = expit(d)``. The likelihood is multinomial (binomial without ties)
on the win / tie / loss counts of each ordered pair, so the cost does not grow
with the number of battles.

A fit lays the outcome out one battle at a time, for ArviZ (which reads one
value per observation): ``observed_data``, the predictive groups and
``log_likelihood`` hold ``outcome(battle)``, coded 0 = a wins, 1 = tie,
2 = b wins, battles listed pair by pair (coord ``pair``), in that order
within a pair. The log-likelihood of a battle is the log of its result's
Davidson probability, so LOO leaves one battle out (not one pair, as the
count likelihood would).

Abilities are zero-sum (a sum-to-zero normal: without the constraint the
model is unidentified and NUTS mixes badly, R-hat 2.8 in our measurement),
centred or non-centred (decided from the design by
the structure helper) with a hierarchical scale ``sd_ability``. ``elo`` puts them on the
Elo scale: 400 points = 10x odds, ``elo = center + 400 / ln 10 * (ability -
ability[anchor])``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from typing import Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ..._base import BoundaryWarning
from ..._base import HierbenchWarning
from ..._base import check_choice
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._numerics import davidson_log_probs
from ...data import PAIR_COUNTS_SCHEMA
from ...data import EvalDataError
from ...data import check_pairwise
from ...data import to_pair_counts
from .._registry import ModelEntry
from .._registry import PriorError
from .._registry import data_provenance
from .._registry import make_prior
from .._registry import register
from .._registry import register_hook
from .._structure import Structure
from .._structure import centre_choice
from .._structure import pair_design
from .._structure import pair_spread
from .._structure import spread_for_centring
from ._ordinal import grade_runs
from ._ordinal import run_grades

__all__ = [
    "BT_DEFAULT_PRIORS",
    "CENTRED_MIN_COMPARISONS",
    "ELO_PER_LOGIT",
    "DisconnectedComparisonWarning",
    "build_bradley_terry",
    "pair_counts_hash",
]

ELO_PER_LOGIT = 400.0 / np.log(10.0)


class DisconnectedComparisonWarning(HierbenchWarning):
    """The comparison graph has several components: their relative abilities rest on the prior alone."""


#: the hooks of a fit with Davidson ties: its outcome laid out one battle at a time (see the module)
HOOKS = {"postprocess": "bradley_terry.battle_layout", "log_likelihood": "bradley_terry.log_likelihood"}

#: what ``outcome(battle)`` holds, in the attrs of every group that has it
OUTCOME_ATTRS = {
    "coding": "0 = a wins, 1 = tie, 2 = b wins (a = agent_a, b = agent_b of the battle's pair)",
    "layout": "one battle per entry, listed pair by pair (coord `pair`) and within a pair in the order "
    "a wins, ties, b wins (a pair's battles are exchangeable; a predictive draw is laid out alike)",
}

#: draws x pairs per chunk of the pointwise log-likelihood
_CHUNK = 2_000_000

#: the centred form also needs every agent in at least this many comparisons
CENTRED_MIN_COMPARISONS = 50

BT_DEFAULT_PRIORS: dict[str, dict[str, Any]] = {
    # scale of the abilities (logit units) when hierarchical=True
    "sd_ability": {"dist": "HalfNormal", "sigma": 1.0},
    # scale of the abilities when hierarchical=False (a fixed, possibly very wide prior)
    "ability": {"dist": "ZeroSumNormal", "sigma": 2.0},
    # first-position (home) advantage, logit units
    "home": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    # Davidson tie parameter: P(tie | equal abilities) = nu / (2 + nu)
    "nu": {"dist": "LogNormal", "mu": 0.0, "sigma": 1.0},
}
_PARAMS = {
    "HalfNormal": {"sigma"},
    "ZeroSumNormal": {"sigma"},
    "Normal": {"mu", "sigma"},
    "LogNormal": {"mu", "sigma"},
    "HalfStudentT": {"nu", "sigma"},
    "StudentT": {"nu", "mu", "sigma"},
    "Exponential": {"lam"},
    "Gamma": {"alpha", "beta"},
}


def _merge_priors(priors: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    out = {k: dict(v) for k, v in BT_DEFAULT_PRIORS.items()}
    if priors is None:
        return out
    unknown = sorted(set(priors) - set(out))
    if unknown:
        raise PriorError(f"`priors` keys must be among {sorted(out)}; got unknown {unknown}")
    for name, spec in priors.items():
        spec = dict(spec)
        dist = spec.pop("dist", out[name]["dist"])
        if dist not in _PARAMS:
            raise PriorError(
                f"`priors[{name!r}]['dist']` must be one of {sorted(_PARAMS)}; got {dist!r}"
            )
        if name == "ability" and dist != "ZeroSumNormal":
            raise PriorError(
                f"`priors['ability']['dist']` must be 'ZeroSumNormal' (abilities are zero-sum); got {dist!r}"
            )
        bad = sorted(set(spec) - _PARAMS[dist])
        if bad:
            raise PriorError(
                f"`priors[{name!r}]`: {dist} takes parameters {sorted(_PARAMS[dist])}; got unknown {bad}"
            )
        base = (
            {k: v for k, v in out[name].items() if k in _PARAMS[dist]}
            if dist == out[name]["dist"]
            else {}
        )
        out[name] = {"dist": dist, **base, **{k: float(v) for k, v in spec.items()}}
    return out


def pair_counts_hash(counts: xr.Dataset) -> str:
    """sha256 of the pair counts and their labels (what a Bradley-Terry model sees)."""
    h = hashlib.sha256()
    h.update(json.dumps([str(v) for v in counts["agent"].values]).encode())
    h.update(
        json.dumps(
            [
                [str(a), str(b)]
                for a, b in zip(counts.agent_a.values, counts.agent_b.values, strict=True)
            ]
        ).encode()
    )
    for name in ("n_win_a", "n_tie", "n_win_b"):
        h.update(np.ascontiguousarray(counts[name].values, dtype=np.int64).tobytes())
    h.update(str(counts.attrs.get("first_position", 0)).encode())
    return h.hexdigest()


def _as_counts(pairs: xr.Dataset) -> xr.Dataset:
    if not isinstance(pairs, xr.Dataset):
        raise EvalDataError(
            "`pairs` must be a pairwise dataset (dim 'comparison') or pair counts (dim 'pair'); "
            f"got {type(pairs).__name__}"
        )
    if "comparison" in pairs.dims:
        return to_pair_counts(check_pairwise(pairs))
    if pairs.attrs.get("hierbench_schema") == PAIR_COUNTS_SCHEMA or "pair" in pairs.dims:
        missing = [
            v
            for v in ("n_win_a", "n_tie", "n_win_b", "agent_a", "agent_b", "agent")
            if v not in pairs.variables
        ]
        if missing:
            raise EvalDataError(f"`pairs` (pair counts) is missing {missing}")
        return pairs
    raise EvalDataError(
        "`pairs` must have a 'comparison' dim (pairwise dataset) or a 'pair' dim (pair counts); "
        f"got dims {tuple(pairs.dims)}"
    )


def _warn_if_disconnected(ia: np.ndarray, ib: np.ndarray, n: np.ndarray, agents: list[str]) -> None:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(agents)
    keep = n > 0
    graph = coo_matrix((np.ones(keep.sum()), (ia[keep], ib[keep])), shape=(m, m))
    n_comp, labels = connected_components(graph, directed=False)
    if n_comp > 1:
        sizes = np.bincount(labels)
        largest = np.flatnonzero(sizes == sizes.max())
        if largest.size == 1:
            small = [agents[i] for i in np.flatnonzero(labels != largest[0])]
            how = (f"agents outside the largest one {small[:10]}{' ...' if len(small) > 10 else ''} are "
                   "compared with it only through the prior")
        else:  # no component is the largest: none is the one the others are measured against
            tied = [[agents[i] for i in np.flatnonzero(labels == c)] for c in largest]
            shown = "; ".join(f"{g[:5]}{' ...' if len(g) > 5 else ''}" for g in tied[:4])
            how = (f"{largest.size} of them tie for the largest ({int(sizes.max())} agents each: {shown}"
                   f"{'; ...' if largest.size > 4 else ''}), and the components are compared with each "
                   "other only through the prior")
        warn_user(
            f"the comparison graph has {n_comp} disconnected components (sizes "
            f"{sorted(sizes.tolist(), reverse=True)}); {how}",
            DisconnectedComparisonWarning,
        )
    return int(n_comp)


def _check_args(counts: xr.Dataset, ties: Any, home_advantage: bool, elo_anchor: Any) -> list[str]:
    """Check the options against the pair counts and return the agents."""
    check_choice(ties, "ties", ("davidson", None))
    agents = [str(x) for x in counts["agent"].values]
    if len(agents) < 2:
        raise EvalDataError(f"`pairs` must compare at least 2 agents; got {agents}")
    n_tie = counts["n_tie"].values.astype(np.int64)
    if ties is None and n_tie.sum() > 0:
        raise EvalDataError(
            f"`ties=None` needs data without ties; `pairs` holds {int(n_tie.sum())} ties in "
            f"{int((n_tie > 0).sum())} pairs. Use ties='davidson', or recode the ties explicitly"
        )
    if ties == "davidson" and n_tie.sum() == 0:
        n = int(sum(counts[k].values.astype(np.int64).sum() for k in ("n_win_a", "n_win_b")))
        warn_user(
            f"`pairs` holds no tie in {n} battles: with ties='davidson' the data push the tie "
            "parameter nu towards 0, the boundary of its range, so its posterior is its prior's lower "
            "tail (prior-driven, not measured). For battles that cannot end in a tie pass ties=None",
            BoundaryWarning,
        )
    if home_advantage and not int(counts.attrs.get("first_position", 0)):
        raise EvalDataError(
            "`home_advantage=True` needs to know which agent held the first position: give "
            "`pairs` a `position` variable (read_battles records it) or pair counts with "
            "first_position=1"
        )
    if elo_anchor is not None and elo_anchor not in agents:
        raise ValueError(f"`elo_anchor` must be one of the agents; got {elo_anchor!r}")
    if counts.sizes["pair"] == 0:
        raise EvalDataError("`pairs` holds no comparisons")
    return agents


def _decide(
    st: Structure, arrays: tuple, hierarchical: bool, centred: Any, ties: Any
) -> bool:
    """Record the structure (hierarchy, centring, ties, graph) and return the centring."""
    ia, ib, w_a, w_b, n_tie = arrays
    d = st.design
    st.decisions["hierarchical"] = {
        "choice": bool(hierarchical),
        "reason": "abilities share a learnt scale sd_ability" if hierarchical else "abilities have a fixed prior scale",
        "source": "auto" if hierarchical else "user",
    }
    if hierarchical:
        # information about an ability: about p (1 - p) <= 1/4 per comparison (0.2
        # allows for unequal pairs), in units of the abilities' spread: the nominal 1
        # logit, or less when the win shares show less (abilities that barely differ
        # are a funnel when centred: SBC at 15 agents x 1,500 battles, 7 of 200
        # replicates diverged, all with sd_ability <= 0.24)
        spread = spread_for_centring(1.0, pair_spread(ia, ib, w_a, w_b, n_tie, d["n_agents"]))
        info = 0.2 * d["median_comparisons_per_agent"] * spread**2
        auto_c, need = centre_choice(info, d["n_agents"])
        many = d["min_comparisons_per_agent"] >= CENTRED_MIN_COMPARISONS
        centred = bool(
            st.decide(
                "centred",
                centred,
                bool(auto_c and many),
                f"median agent information x spread {spread:.2g}^2 = {info:.1f} "
                f"{'>=' if info >= need else '<'} {need:g} needed with {d['n_agents']} agents; "
                f"fewest comparisons {d['min_comparisons_per_agent']} "
                f"({'>=' if many else '<'} {CENTRED_MIN_COMPARISONS})",
            )
        )
    else:
        centred = centred is True
    st.decisions["ties"] = {
        "choice": ties or "none",
        "reason": "Davidson ties" if ties else "the logistic model (no ties in the data)",
        "source": "auto" if ties == "davidson" else "user",
    }
    if d["n_components"] > 1:
        st.decisions["comparison_graph"] = {
            "choice": f"{d['n_components']} components",
            "reason": "agents of different components are compared with each other only through the prior",
            "source": "auto",
        }
    st.hint(
        "sd_ability",
        f"the spread of {d['n_agents']} agents' abilities is weakly identified",
        "hierarchical=False with a fixed `priors['ability']` scale",
    )
    st.hint(
        "ability_z" if not centred else "ability",
        "the centred / non-centred form of the abilities does not suit this design",
        f"centred={not centred}",
    )
    return centred


def _abilities(pri: dict, hierarchical: bool, centred: bool) -> Any:
    """Zero-sum abilities: hierarchical (centred or not) or with a fixed prior scale."""
    if hierarchical and centred:
        sd = make_prior("sd_ability", pri["sd_ability"])
        return pm.ZeroSumNormal("ability", sigma=sd, dims="agent")
    if hierarchical:
        sd = make_prior("sd_ability", pri["sd_ability"])
        z = pm.ZeroSumNormal("ability_z", sigma=1.0, dims="agent")
        return pm.Deterministic("ability", sd * z, dims="agent")
    return make_prior("ability", pri["ability"], dims="agent")


def _outcomes(pri: dict, d: Any, n_cmp: Any, w_a: np.ndarray, n_tie: np.ndarray, w_b: np.ndarray, ties: Any) -> None:
    """Add the likelihood: multinomial win / tie / loss counts (Davidson), or binomial wins."""
    if ties:
        spec = pri["nu"]
        if spec["dist"] == "LogNormal":
            # The same prior written on the log scale: a wide LogNormal's default
            # initial value (its mean) overflows, and an explicit initval would make
            # the model unconvertible for pm.compute_log_likelihood (LOO); the
            # Normal's default start (its mean) is always finite.
            log_nu = pm.Normal("log_nu", spec.get("mu", 0.0), spec.get("sigma", 1.0))
            pm.Deterministic("nu", pt.exp(log_nu))
        else:
            log_nu = pt.log(make_prior("nu", spec))
        logits = pt.stack([d / 2.0, pt.broadcast_to(log_nu, d.shape), -d / 2.0], axis=-1)
        p = pm.math.softmax(logits, axis=-1)
        # observed through pm.Data, so a compiled model can swap them (calibration studies)
        obs = pm.Data("outcome_obs", np.stack([w_a, n_tie, w_b], axis=-1), dims=("pair", "result"))
        pm.Multinomial("outcome_counts", n=n_cmp, p=p, observed=obs, dims=("pair", "result"))
    else:
        obs = pm.Data("n_win_a_obs", w_a, dims="pair")
        pm.Binomial("n_win_a", n=n_cmp, p=pm.math.sigmoid(d), observed=obs, dims="pair")


def _info(st: Structure, counts: xr.Dataset, pri: dict, options: dict, arrays: tuple) -> dict[str, Any]:
    """Return the data the model carries for :func:`hierbench.bayes.fit`."""
    ia, ib, w_a, w_b, n_tie = arrays
    used = ["sd_ability" if options["hierarchical"] else "ability"]
    used += ["nu"] if options["ties"] != "none" else []
    used += ["home"] if options["home_advantage"] else []
    return {
        "model": "bradley_terry",
        "options": options,
        "priors": {k: pri[k] for k in used},
        "structure": st.to_dict(),
        # few agents: the scale of the abilities is weakly identified, smaller steps
        # are cheap for a model this size
        "sampler_defaults": {"target_accept": 0.9} if st.design["n_agents"] < 8 else {},
        "observed_data_name": "outcome_obs" if options["ties"] != "none" else "n_win_a_obs",
        # with ties, the outcome is laid out one battle at a time (HOOKS); the hooks read these
        "hooks": dict(HOOKS) if options["ties"] != "none" else {},
        "pair_index": (ia, ib),
        "outcome_counts": np.stack([w_a, n_tie, w_b], axis=-1),
        "data_hash": pair_counts_hash(counts),
        "var_attrs": {
            "ability": {
                "scale": "logit",
                "meaning": "Bradley-Terry log-strength (sum zero): P(i beats j) = expit(ability_i - ability_j) without ties",
            },
            "elo": {
                "scale": "elo",
                "meaning": f"400 points = 10x odds; anchor {options['elo_anchor']} = {options['elo_center']:g}",
            },
        },
    }


@renamed_kwargs(centered="centred")
def build_bradley_terry(
    pairs: xr.Dataset,
    *,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    ties: str | None = "davidson",
    home_advantage: bool = False,
    hierarchical: bool = True,
    centred: Literal["auto"] | bool = "auto",
    elo_anchor: str | None = None,
    elo_center: float = 1000.0,
) -> pm.Model:
    """Build a Bradley-Terry model (zero-sum abilities, Davidson ties, optional home advantage).

    Parameters
    ----------
    pairs : xarray.Dataset
        A pairwise dataset (:func:`hierbench.data.read_battles`,
        :func:`hierbench.data.to_pairwise`) or its pair counts
        (:func:`hierbench.data.to_pair_counts`,
        :func:`hierbench.data.from_pair_counts`).
    priors : dict, optional
        Overrides of :data:`BT_DEFAULT_PRIORS`, e.g.
        ``{"sd_ability": {"dist": "HalfNormal", "sigma": 2.0}}``; a very wide
        flat-like prior for comparison with maximum likelihood is
        ``hierarchical=False, priors={"ability": {"sigma": 100.0}}``.
    ties : {"davidson", None}
        ``"davidson"``: ties are outcomes with the Davidson (1970)
        probability. ``None``: the logistic model; the data must hold no ties.
    home_advantage : bool
        Add ``home``, the log-odds advantage of the agent in the first
        position (left, shown first, home team). Needs positions in the data.
    hierarchical : bool
        ``True``: ``ability = sd_ability * z`` with ``sd_ability`` learnt (the
        default, partial pooling). ``False``: ``ability ~ ZeroSumNormal(sigma)``
        with the fixed ``priors["ability"]["sigma"]``.
    centred : "auto" or bool
        Parameterisation of the hierarchical abilities: ``ability ~
        ZeroSumNormal(sd_ability)`` (centred) or ``ability = sd_ability * z``
        (non-centred). "auto": centred when the median agent's information
        (about 0.2 per comparison) reaches the centring rule of
        the structure helper's centring rule and every agent has
        at least ``CENTRED_MIN_COMPARISONS`` comparisons (on LLMFAO, 59
        agents, min ESS_bulk of ``sd_ability`` about 2,200 centred vs 180
        non-centred for 2 x 1000 draws), non-centred otherwise. (``centered``,
        the old spelling, still works for one release, with a DeprecationWarning.)
    elo_anchor : str, optional
        Agent whose Elo is ``elo_center``; default the average agent.
    elo_center : float
        Elo of the anchor (default 1000).

    Warns
    -----
    DisconnectedComparisonWarning
        When some agents (including agents never compared) are not linked
        to the others by any chain of comparisons.
    BoundaryWarning
        With ``ties="davidson"`` on battles without a tie: ``nu``'s
        posterior is then its prior's lower tail (use ``ties=None``).

    Returns
    -------
    pymc.Model
        Coords ``agent``, ``pair`` and, with ties, ``result`` (``win_a``,
        ``tie``, ``win_b``). Posterior variables ``ability(agent)``
        (logit scale, sum zero), ``elo(agent)``, ``sd_ability``, ``nu``,
        ``home`` as configured; observed ``outcome_counts(pair, result)``
        (``n_win_a(pair)`` without ties); constant data ``agent_a_idx(pair)``,
        ``agent_b_idx(pair)``, ``n_comparisons(pair)``. ``model.hierbench``
        carries the name, options, priors, structure and data hash for
        :func:`hierbench.bayes.fit`. With ties, a fit's ``observed_data``,
        predictive groups and ``log_likelihood`` hold the outcome one battle at
        a time, ``outcome(battle)`` (0 = a wins, 1 = tie, 2 = b wins; coord
        ``pair``), as ArviZ's predictive checks read it: LOO leaves one battle
        out, not one pair (on LLMFAO elpd -9054.7 per battle against -3939.2
        per pair).

    Examples
    --------
    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> df = pd.DataFrame({"left": ["x", "y", "z", "x"], "right": ["y", "z", "x", "z"],
    ...                    "winner": ["left", "tie", "right", "left"]})
    >>> model = build_bradley_terry(read_battles(df))
    >>> sorted(model.coords["agent"])
    ['x', 'y', 'z']
    """
    counts = _as_counts(pairs)
    centred = check_choice(centred, "centred", ("auto", True, False))
    agents = _check_args(counts, ties, home_advantage, elo_anchor)
    pri = _merge_priors(priors)
    arrays = _pair_arrays(counts, agents)
    n_comp = _warn_if_disconnected(arrays[0], arrays[1], sum(arrays[2:]), agents)
    st = Structure("bradley_terry", pair_design(*arrays, len(agents), n_comp))
    centred = _decide(st, arrays, hierarchical, centred, ties)
    options = {"ties": ties or "none", "home_advantage": bool(home_advantage), "hierarchical": bool(hierarchical),
               "centred": bool(centred), "elo_anchor": elo_anchor or "mean", "elo_center": float(elo_center)}  # fmt: skip
    model = _model(agents, arrays, pri, options, elo_anchor)
    model.hierbench = _info(st, counts, pri, options, arrays)
    model.hierbench["root_attrs"] = data_provenance(pairs.attrs)
    return model


def _pair_arrays(counts: xr.Dataset, agents: list[str]) -> tuple[np.ndarray, ...]:
    """``(ia, ib, w_a, w_b, n_tie)``: each pair's agent indices, wins, losses and ties."""
    index = {a: i for i, a in enumerate(agents)}
    ia = np.array([index[str(a)] for a in counts["agent_a"].values], dtype=np.int64)
    ib = np.array([index[str(b)] for b in counts["agent_b"].values], dtype=np.int64)
    w_a, w_b, n_tie = (counts[k].values.astype(np.int64) for k in ("n_win_a", "n_win_b", "n_tie"))
    return ia, ib, w_a, w_b, n_tie


def _model(agents: list[str], arrays: tuple, pri: dict, options: dict, elo_anchor: str | None) -> pm.Model:
    """Build the ``pm.Model``: abilities, their Elo, the first-position advantage, the outcomes."""
    ia, ib, w_a, w_b, n_tie = arrays
    ties = options["ties"] != "none"
    coords: dict[str, Any] = {"agent": agents, "pair": np.arange(len(ia))}
    if ties:
        coords["result"] = ["win_a", "tie", "win_b"]
    with pm.Model(coords=coords) as model:
        a_idx = pm.Data("agent_a_idx", ia, dims="pair")
        b_idx = pm.Data("agent_b_idx", ib, dims="pair")
        n_cmp = pm.Data("n_comparisons", w_a + n_tie + w_b, dims="pair")
        ability = _abilities(pri, options["hierarchical"], options["centred"])
        anchor = ability[agents.index(elo_anchor)] if elo_anchor is not None else ability.mean()
        pm.Deterministic("elo", options["elo_center"] + ELO_PER_LOGIT * (ability - anchor), dims="agent")
        d = ability[a_idx] - ability[b_idx]
        if options["home_advantage"]:
            d = d + make_prior("home", pri["home"])
        _outcomes(pri, d, n_cmp, w_a, n_tie, w_b, ties)
    return model


register(
    ModelEntry(
        name="bradley_terry",
        builder=build_bradley_terry,
        default_priors=lambda opts: {
            k: v
            for k, v in BT_DEFAULT_PRIORS.items()
            if k != ("ability" if opts.get("hierarchical", True) else "sd_ability")
            and (k != "nu" or opts.get("ties", "davidson") == "davidson")
            and (k != "home" or opts.get("home_advantage", False))
        },
        default_options={"ties": "davidson", "home_advantage": False, "hierarchical": True},
        hooks=HOOKS,
        description="Bradley-Terry with zero-sum abilities, Davidson ties and optional first-position advantage",
    )
)


def _counts_of(dt: xr.DataTree, group: str) -> xr.DataArray | None:
    """``outcome_counts(..., pair, result)`` of ``group`` while it is laid out by pair, else None."""
    if group not in dt.children or "outcome_counts" not in dt[group].data_vars:
        return None
    da = dt[group]["outcome_counts"]
    if not {"pair", "result"} <= set(da.dims):
        return None
    return da.transpose(*[d for d in da.dims if d not in ("pair", "result")], "pair", "result")


@register_hook("bradley_terry.battle_layout")
def _battle_layout(dt: xr.DataTree, gen: np.random.Generator | None = None, *, info: Mapping[str, Any]) -> xr.DataTree:
    """Lay a Davidson fit's outcome out one battle at a time, ``outcome(battle)``, in every group that has it.

    The likelihood counts results per pair (``outcome_counts(pair, result)``: a multinomial per
    pair, how the model is sampled and what PyMC's predictive draws); ArviZ reads one value per
    observation, the same in ``observed_data``, the predictives and ``log_likelihood`` (which
    ``_log_likelihood`` writes per battle). Coded as :data:`OUTCOME_ATTRS` says; each pair's
    battles take its results in the order a wins, ties, b wins (a predictive draw's too: the
    battles of a pair are exchangeable). No draw changes: ``gen`` is not used.
    """
    obs = _counts_of(dt, "observed_data")
    if obs is None:  # no ties (one binomial count per pair, which ArviZ reads), or laid out already
        return dt
    n = obs.values.sum(-1)
    pair, pos = grade_runs(obs.values)
    coords = {"battle": np.arange(pair.size), "pair": ("battle", obs["pair"].values[pair])}
    for group in ("observed_data", "posterior_predictive", "prior_predictive"):
        da = _counts_of(dt, group)
        if da is None:
            continue
        if not (da.values.sum(-1) == n).all():
            raise RuntimeError(f"{group}: the predicted results of a pair do not add up to its battles")
        lead = [d for d in da.dims if d not in ("pair", "result")]
        y = xr.DataArray(
            run_grades(da.values, pair, pos), dims=(*lead, "battle"),
            coords={**{d: da[d] for d in lead if d in da.coords}, **coords}, attrs={**da.attrs, **OUTCOME_ATTRS},
        )  # fmt: skip
        dt[group] = xr.DataTree(xr.Dataset({"outcome": y}, attrs=dt[group].attrs))
    return dt


def _observed_battles(dt: xr.DataTree, info: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Each battle's pair and result (0, 1, 2) as the fit observed them: its counts, or its battles once laid out.

    The fit's own ``observed_data`` (a replicate's, when its data were swapped), else the model's.
    """
    counts = _counts_of(dt, "observed_data")
    if counts is not None:
        return grade_runs(counts.values)[0], run_grades(counts.values, *grade_runs(counts.values))
    if "observed_data" in dt.children and "outcome" in dt["observed_data"].data_vars:
        y = dt["observed_data"]["outcome"]
        return np.asarray(y["pair"].values, dtype=np.int64), np.asarray(y.values, dtype=np.int64)
    counts = np.asarray(info["outcome_counts"])
    return grade_runs(counts)[0], run_grades(counts, *grade_runs(counts))


@register_hook("bradley_terry.log_likelihood")
def _log_likelihood(dt: xr.DataTree, *, info: Mapping[str, Any]) -> xr.Dataset:
    """Pointwise log-likelihood ``outcome(chain, draw, battle)`` of a Bradley-Terry fit, one battle at a time.

    A battle's value is the log of its result's Davidson probability at the draw
    (``_numerics.davidson_log_probs``); a pair's battles sum to its multinomial log-likelihood less the
    log multinomial coefficient. LOO therefore leaves one battle out, not one pair (the elpd
    differs from the count likelihood's by the coefficients and by what is left out). Without
    ties, PyMC's per-pair binomial is kept (no hook).
    """
    pair, result = _observed_battles(dt, info)
    ia, ib = (np.asarray(v) for v in info["pair_index"])
    post = dt["posterior"].to_dataset()
    ability = post["ability"].transpose("chain", "draw", "agent").values
    C, D = ability.shape[:2]
    ability = ability.reshape(C * D, -1)
    home = post["home"].values.reshape(-1, 1) if info["options"]["home_advantage"] else np.zeros((C * D, 1))
    log_nu = (post["log_nu"] if "log_nu" in post else np.log(post["nu"])).values.reshape(-1, 1)
    out = np.empty((C * D, pair.size))
    step = max(1, _CHUNK // max(ia.size, 1))
    for lo in range(0, C * D, step):
        sl = slice(lo, lo + step)
        d = ability[sl][:, ia] - ability[sl][:, ib] + home[sl]
        out[sl] = davidson_log_probs(d, log_nu[sl])[:, pair, result]
    coords = {"chain": post["chain"].values, "draw": post["draw"].values, "battle": np.arange(pair.size),
              "pair": ("battle", pair)}  # fmt: skip
    return xr.Dataset({"outcome": (("chain", "draw", "battle"), out.reshape(C, D, pair.size), OUTCOME_ATTRS)},
                      coords=coords)  # fmt: skip
