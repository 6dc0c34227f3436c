"""The package's shape: public names never vanish, rooms import each other only downwards
and only through a subpackage's own ``__init__``.

The expected values are data, not code under test: ``tests/public_api.json`` is the
snapshot of every subpackage's ``__all__`` taken before ``freq/`` was split into wings
(a name may be added; removing one needs a release of deprecation first), and
``ALLOWED`` below is the table of arrows in ARCHITECTURE.md.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import pathlib
import warnings

import pytest

import hierbench

PKG = pathlib.Path(hierbench.__file__).parent
SNAPSHOT = json.loads((pathlib.Path(__file__).parent / "public_api.json").read_text())

#: room -> the rooms it may import (ARCHITECTURE.md). A room is a top-level module or
#: subpackage of hierbench; "__init__" is the package root (its version string).
ALLOWED: dict[str, set[str]] = {
    "_base": set(),
    "_docs": set(),
    "_numerics": set(),
    "_priors": set(),
    "_parallel": {"_base", "_docs"},
    "data": {"_base", "_docs"},
    "freq": {"_base", "_docs", "_numerics", "_parallel", "_priors", "data"},
    "metrics": {"_base", "_docs", "_numerics"},
    "io": {"_base", "_docs", "data"},
    "testing": {"_base", "_docs", "data"},
    "_console": {"_base", "data"},
    "bayes": {"__init__", "_base", "_docs", "_numerics", "_parallel", "_priors", "data", "metrics"},
    "design": {"_base", "_docs", "_numerics", "_parallel", "freq"},
    "compare": {"_base", "_docs", "_parallel", "freq"},
    "report": {"__init__", "_base", "_docs", "bayes", "data", "freq", "io", "metrics"},
    "demo": {"_base", "_console", "bayes", "compare", "data", "freq", "io", "metrics", "report", "testing"},
    "cli": {"__init__", "_base", "_console", "bayes", "data", "demo", "freq", "io", "report"},
    "__main__": {"cli"},
    "__init__": {"_base", "_docs", "data", "freq", "metrics", "design", "compare", "io", "testing"},
}
SUBPACKAGES = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}


def _modules():
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG.parent).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield f, ".".join(parts)


def _imports(f: pathlib.Path, mod: str):
    """(target module, imported names) of every ``from`` import, nested ones included."""
    pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "hierbench" or target.startswith("hierbench."):
                yield node.lineno, target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("hierbench."):
                    yield node.lineno, a.name, []


def _room(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _arrows() -> tuple:
    """Every import that crosses rooms, parsed once per session (three tests read it)."""
    return tuple(_cross_room_imports())


def _cross_room_imports():
    for f, mod in _modules():
        for line, target, names in _imports(f, mod):
            if target == "hierbench":  # `from .. import freq`: the names are rooms
                targets = [(f"hierbench.{n}", n) for n in names if n in SUBPACKAGES] or [(target, "__init__")]
            else:
                targets = [(target, _room(target))]
            for tgt, room in targets:
                if room != _room(mod):
                    yield f, line, mod, tgt, room, names


@pytest.mark.parametrize("module", sorted(SNAPSHOT))
def test_public_names_never_vanish(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        now = set(importlib.import_module(module).__all__)
    gone = sorted(set(SNAPSHOT[module]) - now)
    assert not gone, f"{module} lost public names {gone}"


def test_every_public_name_resolves():
    for module in SNAPSHOT:
        mod = importlib.import_module(module)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not missing, f"{module}.__all__ names undefined attributes {missing}"


@pytest.mark.parametrize("name", ["bayes_variance_components", "bayes_d_study"])
def test_moved_names_warn_and_still_work(name):
    import hierbench.freq as freq
    import hierbench.metrics as metrics

    with pytest.warns(DeprecationWarning, match=f"moved to hierbench.metrics.{name}"):
        obj = getattr(freq, name)
    assert obj is getattr(metrics, name)


def test_rooms_import_only_the_rooms_the_architecture_allows():
    bad = sorted(
        f"{f.relative_to(PKG.parent)}:{line} imports {tgt} ({room})"
        for f, line, mod, tgt, room, _ in _arrows()
        if room not in ALLOWED.get(_room(mod), set())
    )
    assert not bad, "arrows outside ARCHITECTURE.md's table:\n" + "\n".join(bad)


def test_other_rooms_are_entered_through_their_init():
    deep = sorted(
        f"{f.relative_to(PKG.parent)}:{line} imports {tgt} {names}"
        for f, line, mod, tgt, room, names in _arrows()
        if room in SUBPACKAGES and tgt.count(".") > 1
    )
    assert not deep, "imports that bypass a subpackage's __init__:\n" + "\n".join(deep)


def test_no_circle_between_rooms():
    graph: dict[str, set[str]] = {}
    for _, _, mod, _, room, _ in _arrows():
        graph.setdefault(_room(mod), set()).add(room)

    def reach(a, seen):
        for b in graph.get(a, ()):
            if b not in seen:
                seen.add(b)
                reach(b, seen)
        return seen

    circles = sorted(a for a in graph if a in reach(a, set()) and a != "__init__")
    assert not circles, f"rooms on an import circle: {circles}"


def _module_arrows() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, nested imports included.

    ``from pkg import name`` points at ``pkg.name`` where that is a module, else at ``pkg``
    (a package is its ``__init__``).
    """
    modules = {mod for _, mod in _modules()}
    graph: dict[str, set[str]] = {}
    for f, mod in _modules():
        for _, target, names in _imports(f, mod):
            heads = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}
            rest = [n for n in names if f"{target}.{n}" not in modules]
            if rest or not names:
                heads.add(target)
            graph.setdefault(mod, set()).update(h for h in heads if h in modules and h != mod)
    return graph


def test_no_circle_between_modules():
    """No module reaches itself through imports, inside a room or a wing as well as between
    rooms (a late import inside a function counts: it only hides the circle).
    """
    graph = _module_arrows()
    state: dict[str, int] = {}
    circles = []

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                circles.append(" -> ".join([*path[path.index(n):], n]))
            elif n not in state:
                visit(n, [*path, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_freq_wings_enter_each_other_through_their_init():
    """A wing of freq takes another wing's names from that wing's ``__init__`` only; what
    several wings share lives below them (``freq/_kernels``, ``freq/_inputs``, ``_numerics``,
    ``_base``).
    """
    deep = []
    for f, mod in _modules():
        parts = mod.split(".")
        if len(parts) < 3 or parts[1] != "freq":
            continue
        for line, target, names in _imports(f, mod):
            t = target.split(".")
            if len(t) > 3 and t[1] == "freq" and t[2] != parts[2]:
                deep.append(f"{f.relative_to(PKG.parent)}:{line} imports {target} {names}")
    assert not deep, "wings entered by a private module:\n" + "\n".join(deep)


def test_freq_wings_own_their_names():
    wings = [p for p in (PKG / "freq").iterdir() if (p / "__init__.py").exists()]
    assert len(wings) >= 8
    import hierbench.freq as freq

    owned = set()
    for w in wings:
        mod = importlib.import_module(f"hierbench.freq.{w.name}")
        assert mod.__all__, f"{w.name} has no __all__"
        owned |= set(mod.__all__)
    flat = [p.name for p in (PKG / "freq").glob("_*.py") if p.name != "__init__.py"]
    assert sorted(flat) == ["_inputs.py", "_kernels.py"], flat
    moved = set(freq._MOVED) | {"task_weights"}  # old names kept for one release, and a kernel
    assert set(freq.__all__) - moved == owned


def test_warnings_sit_under_a_few_meanings():
    """Warning classes have distinct names, and most derive from one of the four meanings
    (the rest are reading, design and reporting notices under HierbenchWarning).
    """
    import inspect

    import hierbench._base as base

    bases = (base.UndefinedWarning, base.NotConvergedWarning, base.SmallSampleWarning, base.BoundaryWarning)
    light = [m for _, m in _modules() if not m.startswith(("hierbench.bayes", "hierbench.report")) and "__main__" not in m]
    seen: dict[str, type] = {}
    for mod in light:
        for name, obj in vars(importlib.import_module(mod)).items():
            if inspect.isclass(obj) and issubclass(obj, Warning) and obj.__module__ == mod:
                assert name not in seen, f"two warning classes named {name}"
                seen[name] = obj
    under = sorted(n for n, c in seen.items() if issubclass(c, bases))
    assert len(under) >= 15, under


def test_lint_rules_hold():
    """The ruff rules in pyproject.toml (docstring convention, import bans) hold everywhere."""
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."],
                          cwd=root, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_every_package_warning_names_the_callers_line():
    """A warning points at the first line outside hierbench, whatever the depth of the call.

    Statically: every ``warnings.warn`` in the package passes ``skip_file_prefixes``.
    Behaviourally: warnings from a renamed-keyword wrapper, from deep inside pass@k and from
    the deprecation itself all carry this file's name and the calling line.
    """
    root = pathlib.Path(hierbench.__file__).parent
    bare = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "warn" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("warnings", "_warnings")
                    and "skip_file_prefixes" not in {k.arg for k in node.keywords}):  # fmt: skip
                bare.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not bare, f"warnings.warn without skip_file_prefixes=OUTSIDE_PACKAGE: {bare}"

    from hierbench.freq import pass_at_k
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=2, n_tasks=5, n_runs=1, rng=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        pass_at_k(ds, 3, run_dim="run")  # too few runs for k: a warning from inside
        pass_at_k(ds, 3, dim="run")  # the old keyword: its deprecation and the same warning
    assert caught and {w.filename for w in caught} == {__file__}
    assert {w.lineno for w in caught} == {line, line + 1}
