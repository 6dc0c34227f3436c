"""A small language for generalizability-theory designs: which facets are crossed, which nested.

Grammar (whitespace ignored)::

    expr  := term ("*" term)*          crossed
    term  := atom (":" atom)*          left nested in right: "run:task:family"
    atom  := NAME | "(" expr ")"

``"run:(agent*task)"`` puts runs in agent x task cells; ``"sample:cask:batch"``
nests samples in casks in batches; ``"person*item*occasion"`` crosses three
facets; ``"run:(agent*(task:family))"`` crosses agents with tasks nested in
task families and puts runs in the cells.

The effects (variance components) follow Brennan's rules: one effect for
every non-empty set of facets that is closed under nesting (a facet brings
the facets it is nested in), named by its primary facets followed by its
nesting facets, joined with ``":"`` (``"task:family"``,
``"agent:task:family"``); the effect of all facets is the ``residual``.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from dataclasses import field

from ..._base import HierbenchError

__all__ = ["Design", "DesignError", "parse_design"]

MAX_FACETS = 5  # four facets plus the replicate facet


class DesignError(HierbenchError):
    """A design description that cannot be parsed or does not fit the data."""


@dataclass(frozen=True)
class Design:
    """A parsed design.

    Attributes
    ----------
    formula : str
        The description as given (normalised spacing).
    facets : tuple of str
        Facet names, outer facets before the facets nested in them, otherwise
        in order of first appearance.
    parents : dict
        ``facet -> frozenset`` of every facet it is nested in (transitively).
    effects : tuple of frozenset
        The effects, ordered by size then facet order; the last is the residual.
    """

    formula: str
    facets: tuple[str, ...]
    parents: dict[str, frozenset[str]]
    effects: tuple[frozenset[str], ...]
    # memo of primary() and names (pure functions of the fields above; not part of equality)
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    def primary(self, effect: frozenset[str]) -> tuple[str, ...]:
        """Facets of ``effect`` that no other facet of ``effect`` is nested in."""
        key = ("primary", effect)
        out = self._memo.get(key)
        if out is None:
            out = tuple(
                f
                for f in self.facets
                if f in effect and not any(f in self.parents[g] for g in effect)
            )
            self._memo[key] = out
        return out

    def nesting(self, effect: frozenset[str]) -> tuple[str, ...]:
        """Facets of ``effect`` that some other facet of ``effect`` is nested in."""
        prim = self.primary(effect)
        return tuple(f for f in self.facets if f in effect and f not in prim)

    def name(self, effect: frozenset[str]) -> str:
        """Brennan's name with ``:`` separators; the effect of all facets is ``residual``."""
        if effect == frozenset(self.facets):
            return "residual"
        return ":".join(self.primary(effect) + self.nesting(effect))

    @property
    def names(self) -> tuple[str, ...]:
        out = self._memo.get("names")
        if out is None:
            out = self._memo["names"] = tuple(self.name(e) for e in self.effects)
        return out

    def effect(self, name: str) -> frozenset[str]:
        for e in self.effects:
            if self.name(e) == name:
                return e
        raise KeyError(name)

    def without(self, facet: str) -> Design:
        """Return the design with ``facet`` removed (a facet with a single level)."""
        facets = tuple(f for f in self.facets if f != facet)
        parents = {f: self.parents[f] - {facet} for f in facets}
        return _build(f"{self.formula}{WITHOUT}{facet})", facets, parents)


#: how a design's formula says a facet was removed (``Design.without``); ``given_formula`` reads it back
WITHOUT = " (without "


def given_formula(formula: str) -> str:
    """The design as given, before ``Design.without`` removed facets from it.

    Examples
    --------
    >>> given_formula(parse_design("run:(agent*task)").without("agent").formula)
    'run:(agent*task)'
    """
    return formula.split(WITHOUT)[0]


_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_.\-]*)|(.))")


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any character
            break
        tok = m.group(1) or m.group(2)
        if tok is not None and not tok.isspace():
            if m.group(2) is not None and tok not in "*:()":
                raise DesignError(
                    f"`design`: unexpected character {tok!r} at position {m.start(2)} in {text!r}; "
                    "facets are names joined by '*' (crossed) and ':' (left nested in right)"
                )
            out.append(tok)
        pos = m.end()
    return out


def _parse(text: str) -> tuple[list[str], dict[str, set[str]]]:
    toks = _tokens(text)
    if not toks:
        raise DesignError("`design` must name at least one facet; got an empty string")
    i = 0
    order: list[str] = []
    parents: dict[str, set[str]] = {}

    def atom() -> list[str]:
        nonlocal i
        if i >= len(toks):
            raise DesignError(f"`design` {text!r} ends early")
        t = toks[i]
        if t == "(":
            i += 1
            fs = expr()
            if i >= len(toks) or toks[i] != ")":
                raise DesignError(f"`design` {text!r}: unbalanced parentheses")
            i += 1
            return fs
        if t in "*:)":
            raise DesignError(f"`design` {text!r}: expected a facet name, got {t!r}")
        i += 1
        if t in parents:
            raise DesignError(f"`design` {text!r}: facet {t!r} appears twice")
        parents[t] = set()
        order.append(t)
        return [t]

    def term() -> list[str]:
        nonlocal i
        groups = [atom()]
        while i < len(toks) and toks[i] == ":":
            i += 1
            groups.append(atom())
        # left nested in right: every facet of group k is nested in every facet of groups > k
        for k in range(len(groups) - 1):
            outer = {f for g in groups[k + 1 :] for f in g}
            for f in groups[k]:
                parents[f] |= outer
        return [f for g in groups for f in g]

    def expr() -> list[str]:
        nonlocal i
        fs = term()
        while i < len(toks) and toks[i] == "*":
            i += 1
            fs += term()
        return fs

    expr()
    if i != len(toks):
        raise DesignError(
            f"`design` {text!r}: unexpected {toks[i]!r} at token {i}; the language crosses facets with `*` "
            "and nests with `:` (e.g. 'person*item*occasion', 'run:(agent*task)')"
            + (": write `*` for x" if str(toks[i]).lower() in ("x", "×") else "")
        )
    # transitive closure
    changed = True
    while changed:
        changed = False
        for f in order:
            extra = set().union(*(parents[g] for g in parents[f])) - parents[f]
            if extra:
                parents[f] |= extra
                changed = True
    return order, parents


def _build(formula: str, order, parents) -> Design:
    # outer facets before the facets nested in them, otherwise first appearance
    facets: list[str] = []
    pending = list(order)
    while pending:
        for f in pending:
            if all(p in facets for p in parents[f]):
                facets.append(f)
                pending.remove(f)
                break
    idx = {f: k for k, f in enumerate(facets)}
    effects = []
    for r in range(1, len(facets) + 1):
        for combo in itertools.combinations(facets, r):
            s = frozenset(combo)
            if all(parents[f] <= s for f in s):
                effects.append(s)
    effects.sort(key=lambda e: (len(e), sorted(idx[f] for f in e)))
    return Design(
        formula=formula,
        facets=tuple(facets),
        parents={f: frozenset(parents[f]) for f in facets},
        effects=tuple(effects),
    )


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str) -> Design:
    order, parents = _parse(text)
    if len(order) > MAX_FACETS:
        raise DesignError(
            f"`design` {text!r} names {len(order)} facets; at most {MAX_FACETS} are supported"
        )
    return _build(" ".join(text.split()), order, parents)


def parse_design(text: str) -> Design:
    """Parse a design description.

    Parameters
    ----------
    text : str
        Facets joined by ``*`` (crossed) and ``:`` (left nested in right),
        with parentheses; at most five facets.

    Returns
    -------
    Design

    Examples
    --------
    >>> d = parse_design("run:(agent*(task:family))")
    >>> d.facets
    ('agent', 'family', 'task', 'run')
    >>> d.names
    ('agent', 'family', 'agent:family', 'task:family', 'agent:task:family', 'residual')
    >>> parse_design("sample:cask:batch").names
    ('batch', 'cask:batch', 'residual')
    """
    if not isinstance(text, str):
        raise TypeError(f"`design` must be a string; got {type(text).__name__}")
    return _parse_cached(text)
