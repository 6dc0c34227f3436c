"""Posterior predictive check of a Bradley-Terry fit against its battles.

The model takes every battle as an independent judgment given the abilities (and the
first-position advantage and Davidson tie parameter, where fitted). Two discrepancies test
that, each computed per posterior draw for the observed battles and for one replicated set of
the same battles drawn from the model at that draw (Gelman, Meng and Stern 1996, realised
discrepancies):

- **pairs**: the deviance G^2 = 2 sum O ln(O / E) of the win / tie / loss counts of each pair
  of agents that met, against the draw's probabilities (E = battles x probability). Pairs are
  unordered where the model has no first-position effect (the orientation of a battle does not
  enter it), ordered (first position first) where it has one.
- **prompts** (a battle log with a prompt (``task``) column beside the fit): for each agent on
  each prompt, its score (wins plus half the ties) against its predicted score, squared over the
  predicted variance, summed over the agent x prompt cells with battles: the between-prompt
  spread of each agent's record that a prompt bootstrap captures and the model does not allow.
- **judges** (a battle log with a ``judge`` column): the same discrepancy over agent x judge
  cells: judges who favour some agents over others (an LLM judge's self-preference, a crowd
  worker's taste), which independent battles with common abilities do not allow.

The posterior predictive p-value is ``P(D(rep) >= D(obs))`` over the draws, one-sided: small
values mean the battles vary more than independent battles would. The replicated battles are
the fit's ``posterior_predictive`` draws where it has them (laid out pair by pair, sorted within
a pair, so for the prompt check each pair's replicated results are dealt to its battles in a
random order, which, the battles of a pair being exchangeable under the model, is a draw of the
same law), else drawn here from the posterior with the report's seed.

Audit P, F3 (2026-12-07): on LLMFAO the pair-level G^2 was 3,392 against a parametric
bootstrap's 2,062 (SD 65); the report made no check of the fit against its battles.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy import sparse
from scipy.special import xlogy

__all__: list[str] = []

#: at most this many posterior draws (evenly thinned); the p-value's Monte Carlo SE is then <= 0.016
MAX_DRAWS = 1000
#: at least this many draws are kept however many battles there are
MIN_DRAWS = 100
#: draws x battles held at once (the replicated battles of the draws kept)
MAX_CELLS = 20_000_000
#: a p-value below this is a failed check
LEVEL = 0.05


def fit_pairs(fit: xr.DataTree) -> dict | None:
    """The battles a Bradley-Terry fit saw, per pair as the model orients them (``_match.fit_pair_counts``).

    ``ia``, ``ib``: each pair's agents (indices into the posterior's ``agent``); ``counts``: win of
    ``ia`` / tie / win of ``ib`` (pairs x 3); ``agents``. None where the constant data are not a
    Bradley-Terry fit's.
    """
    from ._match import fit_pair_counts

    got = fit_pair_counts(fit)
    if got is None:
        return None
    ia, ib, counts = got
    return {"ia": ia, "ib": ib, "counts": counts, "agents": [str(a) for a in fit["posterior"]["agent"].values]}


def draw_index(n_total: int, n_battles: int) -> np.ndarray:
    """The draws kept (evenly spaced over the chains' draws, stacked chain by chain)."""
    keep = min(n_total, MAX_DRAWS, max(MIN_DRAWS, MAX_CELLS // max(n_battles, 1)))
    return np.unique(np.linspace(0, n_total - 1, keep).round().astype(np.int64))


def draw_probs(post: xr.Dataset, idx: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Each kept draw's probabilities of win of ``ia`` / tie / win of ``ib`` per pair (draws x pairs x 3).

    ``ability`` (chain, draw, agent), ``home`` where fitted (added for the first agent), ``nu`` or
    ``log_nu`` (Davidson; neither: no ties, the logistic model).
    """
    from ..metrics import davidson_log_probs

    ab = post["ability"].transpose("chain", "draw", "agent").values
    ab = ab.reshape(-1, ab.shape[-1])[idx]
    d = ab[:, ia] - ab[:, ib]
    if "home" in post:
        d = d + post["home"].transpose("chain", "draw").values.ravel()[idx, None]
    if "log_nu" in post:
        log_nu = post["log_nu"].transpose("chain", "draw").values.ravel()[idx, None]
    elif "nu" in post:
        log_nu = np.log(post["nu"].transpose("chain", "draw").values.ravel()[idx, None])
    else:
        log_nu = -np.inf
    return np.exp(davidson_log_probs(d, log_nu))


def pair_deviance(counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """G^2 = 2 sum O ln(O / (n p)) over pairs and results (last two axes): O = ``counts``, n its sum per pair.

    A result of probability 0 that did not happen adds 0 (``xlogy``); one that happened adds inf.
    """
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(-1, keepdims=True)
    return 2.0 * (xlogy(counts, counts) - xlogy(counts, n * probs)).sum((-2, -1))


def pair_units(ia: np.ndarray, ib: np.ndarray, home: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each fit pair's unit (``unit``), whether it is flipped into its unit's orientation, each unit's first pair.

    With a first-position effect the units are the ordered pairs themselves; without, ``(a, b)``
    and ``(b, a)`` are one unordered pair, oriented as its first fit pair is.
    """
    if home:
        j = np.arange(ia.size)
        return j, np.zeros(ia.size, dtype=bool), j
    lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
    _, first, unit = np.unique(lo * (max(ia.max(), ib.max()) + 1) + hi, return_index=True, return_inverse=True)
    flip = ia != ia[first][unit]
    return unit.ravel(), flip, first


def replicated_battles(fit: xr.DataTree, idx: np.ndarray, probs: np.ndarray, slot_pair: np.ndarray,
                       seed: int | None) -> tuple[np.ndarray, bool, str]:  # fmt: skip
    """One replicated set of the fit's battles per kept draw: (draws x battles results 0/1/2, sorted, source).

    Battles are laid out as the fit lays them out (pair by pair; ``slot_pair``: each one's pair).
    From the fit's ``posterior_predictive`` where it holds the outcome (``sorted``: each pair's
    results come sorted), else drawn here from ``probs`` with ``seed``.
    """
    pp = fit["posterior_predictive"].to_dataset() if "posterior_predictive" in fit.children else xr.Dataset()
    start = np.r_[0, np.flatnonzero(np.diff(slot_pair)) + 1]
    pos = np.arange(slot_pair.size) - np.repeat(start, np.diff(np.r_[start, slot_pair.size]))
    lead = ("chain", "draw")
    if "outcome" in pp and set(pp["outcome"].dims) == {*lead, "battle"}:
        y = pp["outcome"].transpose(*lead, "battle").values
        y = y.reshape(-1, y.shape[-1])[idx]
        if y.shape[1] == slot_pair.size and "pair" in pp["outcome"].coords and (
                np.asarray(pp["outcome"]["pair"].values) == slot_pair).all():  # fmt: skip
            return y.astype(np.int8), True, "the fit's posterior_predictive draws"
    cum = None
    if "outcome_counts" in pp and set(pp["outcome_counts"].dims) == {*lead, "pair", "result"}:
        c = pp["outcome_counts"].transpose(*lead, "pair", "result").values
        cum = np.cumsum(c.reshape(-1, *c.shape[-2:])[idx], -1)
    elif "n_win_a" in pp and set(pp["n_win_a"].dims) == {*lead, "pair"}:
        w = pp["n_win_a"].transpose(*lead, "pair").values.reshape(-1, pp.sizes["pair"])[idx]
        cum = np.stack([w, w, np.full_like(w, np.iinfo(np.int64).max)], -1)
    if cum is not None and cum.shape[1] == slot_pair.max() + 1:
        at = cum[:, slot_pair]  # each battle's pair's cumulative counts: its place in the pair sets its result
        return ((pos >= at[..., 0]).astype(np.int8) + (pos >= at[..., 1])), True, "the fit's posterior_predictive draws"
    g = np.random.default_rng(seed)
    cp = np.cumsum(probs, -1)[:, slot_pair]
    u = g.random((idx.size, slot_pair.size))
    seed_words = "rng=None, fresh entropy, not reproducible" if seed is None else f"the report's seed, rng={seed}"
    return ((u >= cp[..., 0]).astype(np.int8) + (u >= cp[..., 1])), False, (
        f"drawn here from the posterior with {seed_words}, as the fit holds no posterior_predictive outcome")  # fmt: skip


def pairs_check(pairs: dict, probs: np.ndarray, rep: np.ndarray, slot_pair: np.ndarray, home: bool) -> dict:
    """The pair-level deviance per draw, observed and replicated, and ``P(rep >= obs)``."""
    unit, flip, first = pair_units(pairs["ia"], pairs["ib"], home)
    n_units = first.size
    obs = np.zeros((n_units, 3))
    np.add.at(obs, unit, np.where(flip[:, None], pairs["counts"][:, ::-1], pairs["counts"]))
    p_unit = probs[:, first]  # the model gives (a, b) and (b, a) the same probabilities, flipped
    s = rep.shape[0]
    res = np.where(flip[slot_pair], 2 - rep, rep).astype(np.int64)
    key = (np.arange(s)[:, None] * n_units + unit[slot_pair]) * 3 + res
    rcounts = np.bincount(key.ravel(), minlength=s * n_units * 3).reshape(s, n_units, 3)
    d_obs = pair_deviance(obs[None], p_unit)
    d_rep = pair_deviance(rcounts, p_unit)
    return {"obs": d_obs, "rep": d_rep, "p": float(np.mean(d_rep >= d_obs)), "n_units": n_units,
            "ordered": bool(home)}  # fmt: skip


def log_battles(battles: xr.Dataset, pairs: dict, home: bool) -> tuple[np.ndarray, np.ndarray] | str:
    """The log's battles as the fit's: each one's fit pair and result for that pair's first agent (0/1/2).

    A string (why not) where the battles are counts per pair or not the fit's, pair by pair.
    """
    if "comparison" not in battles.dims:
        return "the battles are given as counts per pair, with no prompt or judge for each battle"
    agents = pairs["agents"]
    at = pd.Index(agents)
    xa = at.get_indexer(np.asarray(battles["agent_a"].values).astype(str))
    xb = at.get_indexer(np.asarray(battles["agent_b"].values).astype(str))
    out = np.asarray(battles["outcome"].values, dtype=np.float64)
    if "position" in battles:  # position -1: agent_a was second; the fit's pair puts the first agent first
        flip = np.asarray(battles["position"].values) == -1
        xa, xb, out = np.where(flip, xb, xa), np.where(flip, xa, xb), np.where(flip, 1.0 - out, out)
    m = len(agents) + 1
    fwd = pd.Index(pairs["ia"] * m + pairs["ib"])
    j = fwd.get_indexer(xa * m + xb)
    if not home:  # a battle the fit oriented the other way round
        back = fwd.get_indexer(xb * m + xa)
        turn = (j < 0) & (back >= 0)
        j, out = np.where(turn, back, j), np.where(turn, 1.0 - out, out)
    res = np.rint(2 * (1 - out)).astype(np.int64)  # 1 -> 0 (first agent wins), 0.5 -> 1, 0 -> 2
    if (xa < 0).any() or (xb < 0).any() or (j < 0).any():
        return "the battle log has battles between agents the fit's pairs do not hold"
    seen = np.zeros_like(pairs["counts"])
    np.add.at(seen, (j, res), 1)
    if not (seen == pairs["counts"]).all():
        return "the battle log's results per pair are not those the fit saw"
    return j, res


def dealt_replicates(rep: np.ndarray, j: np.ndarray, is_sorted: bool, seed: int | None) -> np.ndarray:
    """The replicated results (draws x battles) in the log's battle order.

    The fit lays its battles out pair by pair; ``is_sorted``: its results come sorted within a
    pair, and are dealt to that pair's battles in a random order (seeded from ``seed``), which,
    the battles of a pair being exchangeable under the model, is a draw of the same law.
    """
    slot = np.empty(j.size, dtype=np.int64)
    slot[np.argsort(j, kind="stable")] = np.arange(j.size)
    if not is_sorted:
        return rep[:, slot]
    slot_pair = np.sort(j)
    g = np.random.default_rng(None if seed is None else [seed, 1])
    deal = np.argsort(slot_pair + g.random(rep.shape), axis=1, kind="stable")
    return np.take_along_axis(rep, deal[:, slot], 1)


def group_check(pairs: dict, probs: np.ndarray, rep: np.ndarray, j: np.ndarray, res: np.ndarray,
                codes: np.ndarray) -> dict:  # fmt: skip
    """The agent x group (prompt, judge) discrepancy per draw, observed and replicated, and ``P(rep >= obs)``.

    ``j``, ``res``: :func:`log_battles`' each battle's fit pair and result; ``rep``: the replicated
    results in the same order (:func:`dealt_replicates`); ``codes``: each battle's group. A battle
    adds its score (1 win, 1/2 tie, 0 loss) to its first agent's cell in its group and 1 minus it
    to its second's; the discrepancy is sum over cells (score - predicted)^2 / predicted variance.
    """
    n_b, n_t = j.size, int(codes.max()) + 1
    cells, inv = np.unique(np.r_[pairs["ia"][j] * n_t + codes, pairs["ib"][j] * n_t + codes], return_inverse=True)
    ca, cb, n_c = inv[:n_b], inv[n_b:], cells.size
    ones = np.ones(n_b)
    diff_b = sparse.csr_matrix((ones, (np.arange(n_b), ca)), shape=(n_b, n_c)) - sparse.csr_matrix(
        (ones, (np.arange(n_b), cb)), shape=(n_b, n_c))  # fmt: skip
    n_pairs = pairs["ia"].size
    na = sparse.csr_matrix((ones, (j, ca)), shape=(n_pairs, n_c))
    nb = sparse.csr_matrix((ones, (j, cb)), shape=(n_pairs, n_c))
    base = np.asarray(nb.sum(0)).ravel()  # the second agents' cells get 1 - score per battle
    e = probs[..., 0] + 0.5 * probs[..., 1]
    var = probs[..., 0] + 0.25 * probs[..., 1] - e**2
    expect = (na - nb).T.dot(e.T).T + base
    v = (na + nb).T.dot(var.T).T
    score_rep = (rep == 0) + 0.5 * (rep == 1)
    score_obs = (res == 0) + 0.5 * (res == 1)
    s_rep = diff_b.T.dot(score_rep.T).T + base
    s_obs = diff_b.T.dot(score_obs) + base

    def disc(s: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, (s - expect) ** 2 / v, 0.0).sum(-1)

    d_obs, d_rep = disc(s_obs[None]), disc(s_rep)
    return {"obs": d_obs, "rep": d_rep, "p": float(np.mean(d_rep >= d_obs)), "n_cells": n_c, "n_groups": n_t}


#: the group checks: key, the battle log's variable, what a group is called (one, many, "on each prompt")
GROUPS = (("prompts", "task", ("prompt", "prompts", "on each prompt")),
          ("judges", "judge", ("judge", "judges", "by each judge")))  # fmt: skip


def group_checks(battles: xr.Dataset | None, pairs: dict, probs: np.ndarray, rep: np.ndarray, is_sorted: bool,
                 home: bool, seed: int | None) -> dict:  # fmt: skip
    """The prompt and judge checks (a dict each), or why not (a string each)."""
    logb = log_battles(battles, pairs, home) if battles is not None else "no battle log is given beside the fit"
    if isinstance(logb, str):
        return {key: logb for key, *_ in GROUPS}
    j, res = logb
    dealt = dealt_replicates(rep, j, is_sorted, seed)
    out: dict = {}
    for key, var, (one, *_) in GROUPS:
        if var not in battles:
            out[key] = f"the battle log has no {one} column" + (" (read_battles(judge=...), --judge)" if var == "judge"
                                                                else " (read_battles(task=...), --prompt)")  # fmt: skip
            continue
        codes, _ = pd.factorize(pd.Series(np.asarray(battles[var].values).astype(str)))
        out[key] = group_check(pairs, probs, dealt, j, res, codes)
    return out


def battle_ppc(fit: xr.DataTree, battles: xr.Dataset | None = None, *, seed: int | None = 0) -> dict:
    """The checks of a Bradley-Terry fit: ``pairs`` (always); ``prompts`` and ``judges`` (a dict, or why not as a string).

    Also ``n_draws`` (kept), ``n_total`` (the fit's), ``source`` (of the replicated battles).
    Raises ValueError where the fit holds no Bradley-Terry pair counts or no ``ability`` draws.
    """
    pairs = fit_pairs(fit)
    post = fit["posterior"].to_dataset() if "posterior" in fit.children else xr.Dataset()
    if pairs is None or "ability" not in post or set(post["ability"].dims) != {"chain", "draw", "agent"}:
        raise ValueError("the fit holds no Bradley-Terry pair counts (constant_data) or no `ability` draws")
    n_per = pairs["counts"].sum(1)
    slot_pair = np.repeat(np.arange(n_per.size), n_per)
    n_total = post.sizes["chain"] * post.sizes["draw"]
    idx = draw_index(n_total, slot_pair.size)
    probs = draw_probs(post, idx, pairs["ia"], pairs["ib"])
    rep, is_sorted, source = replicated_battles(fit, idx, probs, slot_pair, seed)
    home = "home" in post
    out = {"pairs": pairs_check(pairs, probs, rep, slot_pair, home), "n_draws": idx.size, "n_total": n_total,
           "source": source, "ties": "nu" in post or "log_nu" in post}  # fmt: skip
    return out | group_checks(battles, pairs, probs, rep, is_sorted, home, seed)


def _spread(x: np.ndarray) -> str:
    """A discrepancy's median and the range of its middle 95% over the draws."""
    def num(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    lo, hi = np.quantile(x, [0.025, 0.975])
    return f"median {num(np.median(x))} (95% of draws {num(lo)} to {num(hi)})"


def _p_words(p: float, n: int) -> str:
    """A p-value over ``n`` draws; 0 is said as no draw, below 1 / n."""
    if p == 0:
        return f"= 0: in no draw of {n:,} did the replicated reach the observed (p below 1/{n:,} = {1 / n:.2g})"
    return f"= {p:.3f} over {n:,} draws"


def check_text(res: dict) -> str:
    """What the check computed, its results, and what to do when it fails."""
    n, pc = res["n_draws"], res["pairs"]
    kept = f"{n:,} posterior draws" + (f" (evenly thinned from the fit's {res['n_total']:,})" if n < res["n_total"] else "")
    units = (f"{pc['n_units']:,} ordered pairs of agents that met (first position first, as the model with its "
             "first-position advantage orients them)" if pc["ordered"] else
             f"{pc['n_units']:,} pairs of agents that met (unordered: the model has no first-position effect)")  # fmt: skip
    params = "abilities" + (", first-position advantage" if pc["ordered"] else "") + (
        " and tie parameter" if res["ties"] else "")  # fmt: skip
    results = "win / tie / loss" if res["ties"] else "win / loss"
    text = (f"A check of the Bradley-Terry fit against its battles, which it takes as independent judgments. For each "
            f"of {kept}, a discrepancy is computed at that draw's {params} for the observed "
            f"battles and for one replicated set of the same battles drawn from the model at that draw "
            f"({res['source']}). The posterior predictive p-value is P(D(replicated) >= D(observed)), the share of "
            "draws whose replicated battles fit no better than the observed ones; it is one-sided: a small value "
            "(below 0.05) means the battles vary more than independent battles would, and a value near 1 is no "
            "misfit of this kind.\n\n"
            f"- **Pairs**: the deviance G² = 2 Σ observed × ln(observed / expected) of the {results} counts of "
            f"the {units}. Observed {_spread(pc['obs'])}; replicated {_spread(pc['rep'])}; p {_p_words(pc['p'], n)}.")
    for key, _, (one, many, each) in GROUPS:
        c = res[key]
        if isinstance(c, dict):
            text += (f"\n- **{many.capitalize()}**: each agent's score {each} (wins plus half the ties) against "
                     f"its predicted score, Σ (score − predicted)² / predicted variance over the {c['n_cells']:,} agent × "
                     f"{one} cells with battles ({c['n_groups']:,} {many}). Observed {_spread(c['obs'])}; replicated "
                     f"{_spread(c['rep'])}; p {_p_words(c['p'], n)}.")  # fmt: skip
        else:
            text += f"\n- No {one}-level check: {c}."
    failed = [w for w, c in res.items() if w in ("pairs", *(k for k, *_ in GROUPS))
              and isinstance(c, dict) and c["p"] < LEVEL]  # fmt: skip
    if failed:
        text += (f"\n\n**The model does not fit its battles** (p below {LEVEL} for {_and(failed)}): they vary "
                 "more than independent battles with these abilities would, as when battles that share a prompt or "
                 "a judge are correlated, or the abilities differ from prompt to prompt. The Bayesian intervals "
                 "assume independent battles, so the abilities, ranks and P(a > b) in this report are surer than "
                 "the battles allow. `hierbench.freq.fit_bradley_terry_ml` resamples the prompts, each with all "
                 "its battles: read its intervals for what the battles support.")  # fmt: skip
        text += (" Judges who disagree about the agents are resampled by neither fit: the abilities are an average "
                 "over these judges, and another set of judges could rank the agents otherwise; compare the "
                 "abilities fitted to each judge's battles (read_battles of each judge's rows) before reading the "
                 "ranks as the agents' own." if "judges" in failed else "")  # fmt: skip
    else:
        text += (f"\n\nNo misfit of these kinds shows (every p at least {LEVEL}). A passed check does not show the "
                 "battles independent: only that these summaries do not vary more than the model allows.")
    return text


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def check_figure(res: dict):
    """Observed against replicated discrepancy, one point per draw, a panel per check, with the line y = x."""
    import matplotlib.pyplot as plt

    panels = [("pairs", "pair-level deviance G²")] + [
        (key, f"agent × {one} discrepancy") for key, _, (one, *_) in GROUPS if isinstance(res[key], dict)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.6), squeeze=False)
    for ax, (key, name) in zip(axes[0], panels, strict=True):
        c = res[key]
        ax.scatter(c["obs"], c["rep"], s=8, alpha=0.5, color="C0", label="one posterior draw")
        lo = min(c["obs"].min(), c["rep"].min())
        hi = max(c["obs"].max(), c["rep"].max())
        pad = 0.05 * (hi - lo) if hi > lo else 1.0
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="black", lw=1, label="replicated = observed")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlabel(f"{name}, observed battles")
        ax.set_ylabel(f"{name}, replicated battles")
        ax.set_title(f"{key.capitalize()}: P(replicated ≥ observed) = {c['p']:.3f} over {res['n_draws']:,} draws",
                     fontsize=10)  # fmt: skip
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def sec_battle_ppc(ctx, rep, sid: str) -> None:
    """The posterior predictive checks section of a Bradley-Terry fit: its text and figure."""
    from ._context import _TITLES
    from ._context import _Skip

    ctx.say("posterior predictive check of the Bradley-Terry fit against its battles")
    try:
        res = battle_ppc(ctx.fit, ctx.battles, seed=ctx.rng)
    except ValueError as exc:
        raise _Skip(f"no check of the Bradley-Terry fit against its battles: {exc}") from None
    rep.section(_TITLES[sid], check_text(res), id=sid)
    rep.figure("ppc_battles", check_figure(res),
               "Each point is one posterior draw: the discrepancy of the observed battles (x) against that of the "
               "battles replicated at the same draw (y). The p-value is the share of points on or above the line "
               "replicated = observed; points all below it mean the battles vary more than the model allows.")
