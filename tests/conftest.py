import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# pytest caches each test module with its asserts rewritten as a .pyc, unless bytecode writing is
# off (PYTHONDONTWRITEBYTECODE=1, as on the machines this project is built on): then every run
# rewrites all the modules again in every worker, 8-10 s of each run's collection (fast lane: 150 s
# against 134 s with the cache, same clone). The cache is written beside the tests (git-ignored)
sys.dont_write_bytecode = False

# Imported here, once, before any test runs: under xdist the controller imports the module
# of every warning a worker reports, from two threads at once; a first import of
# hierbench.freq from two threads can deadlock on its internal import cycle (seen as an
# INTERNALERROR "partially initialized module 'hierbench.freq._profiles'").
import hierbench.freq  # noqa: E402, F401

# property tests draw the same examples on every run (derived from each test's name), so that a
# CI run is reproducible like every other seeded test; HYPOTHESIS_PROFILE=explore searches afresh
# (a search found a reader bug at stop 38: a .gz cut inside its signature; its case is now a test)
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

ROOT = Path(__file__).resolve().parents[1]
# the studies in benchmarks/ run at a few replicates in the tests (``from bench_x import study``)
sys.path.insert(0, str(ROOT / "benchmarks"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data folder; CI must have it, so a missing folder fails loudly."""
    path = Path(os.environ.get("HIERBENCH_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.fail(f"shared data folder {path} not found; set HIERBENCH_SHARED_DATA")
    os.environ["HIERBENCH_SHARED_DATA"] = str(path)
    return path


@pytest.fixture(scope="session")
def bt2_reference(shared_data):
    """BradleyTerry2's published fits (``bradley_terry/reference_values.csv``) by data set and model.

    ``bt2_reference("baseball", "model2")`` gives the rows of that data set whose
    model name starts with the prefix, indexed by parameter.
    """
    import pandas as pd

    ref = pd.read_csv(shared_data / "bradley_terry" / "reference_values.csv")

    def select(dataset: str, model_prefix: str) -> pd.DataFrame:
        rows = ref[(ref.dataset == dataset) & ref.model.str.startswith(model_prefix)]
        return rows.set_index("parameter")

    return select


def _bt2_pairs(shared_data, file, **columns):
    from hierbench.data import from_pair_counts

    return from_pair_counts(shared_data / "bradley_terry" / file, **columns)


@pytest.fixture(scope="session")
def citations_counts(shared_data):
    """BradleyTerry2's ``citations`` as pair counts (4 journals, 6 pairs, no ties)."""
    return _bt2_pairs(shared_data, "citations_binomial_pairs.csv", agent_a="journal1",
                      agent_b="journal2", wins_a="win1", wins_b="win2")


@pytest.fixture(scope="session")
def baseball_counts(shared_data):
    """BradleyTerry2's ``baseball`` (Agresti 1987) as pair counts, the home team first."""
    return _bt2_pairs(shared_data, "baseball_agresti1987.csv", agent_a="home.team",
                      agent_b="away.team", wins_a="home.wins", wins_b="away.wins",
                      first_position=True)


@pytest.fixture(scope="session")
def metr_eval(shared_data):
    """METR's runs (``load_metr``, binary scores) as an eval dataset; read once, never modified."""
    from hierbench.data import load_metr

    return load_metr(shared_data)


@pytest.fixture
def rare_and_common():
    """Two agents over 60 tasks x 4 runs: "rare" succeeded once on each of three tasks, "common" about half the time."""
    import numpy as np
    import xarray as xr

    rng = np.random.default_rng(5)
    s = np.zeros((2, 60, 4))
    s[0, :3, 0] = 1.0
    s[1] = rng.random((60, 4)) < 0.5
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": ["rare", "common"], "task": [f"t{i}" for i in range(60)]})  # fmt: skip


@pytest.fixture
def max_t_floor_log():
    """Four agents over 24 task clusters of 3 tasks x 4 runs, and `zero`, which ran 6 clusters and failed them.

    Against an agent that solves some of those clusters, `zero`'s differences flip together on 2 of
    the 2^6 sign patterns: an atom of max-T's law, a floor under every pair's p max-T.
    """
    import numpy as np
    import xarray as xr

    g = np.random.default_rng(0)
    C, S = 24, 3
    fam = np.repeat([f"f{k:02d}" for k in range(C)], S)
    rates = np.clip(g.uniform(0.1, 0.9, C)[None, :] + np.array([[0.35], [0.15], [0.0], [-0.15]]), 0.02, 0.98)
    s = (g.random((4, C * S, 4)) < np.repeat(rates, S, axis=1)[..., None]).astype(float)
    z = np.full((1, C * S, 4), np.nan)
    z[0, : 6 * S, :] = 0.0
    return xr.Dataset({"score": (("agent", "task", "run"), np.concatenate([s, z]))},
                      coords={"agent": ["a", "b", "c", "d", "zero"], "cluster": ("task", fam)})  # fmt: skip


@pytest.fixture(scope="session")
def demo_fast(tmp_path_factory):
    """``hierbench demo --fast`` through the CLI's ``main()``, run once (40-55 s; one worker under -n).

    Read by ``test_cli.py`` (the printout, the warnings, the files) and
    ``test_report_browser.py`` (the HTML report, the figures' overlapping text).
    Gives ``code``, ``out`` (stdout), ``err`` (stderr: the ``warning:`` lines), ``warnings`` (all recorded), ``folder`` and
    ``overlaps`` (figure name -> overlapping text found while it was drawn).
    """
    import contextlib
    import io
    import warnings
    from types import SimpleNamespace

    from figure_overlap import ReportOverlaps

    from hierbench.cli import main

    folder, out, err = tmp_path_factory.mktemp("demo") / "report", io.StringIO(), io.StringIO()
    with (warnings.catch_warnings(record=True) as caught, ReportOverlaps() as ov, contextlib.redirect_stdout(out),
          contextlib.redirect_stderr(err)):  # fmt: skip
        warnings.simplefilter("always")
        code = main(["demo", "--fast", "--out", str(folder)])
    return SimpleNamespace(code=code, out=out.getvalue(), err=err.getvalue(), warnings=caught, folder=folder,
                           overlaps=ov.found)  # fmt: skip


#: the longest tests (15-70 s each on 2 quiet cores: cold compiles, worker pools, notebooks,
#: the docs build, the docstring fits, JAX, the demo behind two tests), started first and
#: longest first so that the two xdist workers finish together instead of one of them running
#: a long test alone at the end (``pytest_xdist_make_scheduler`` below hands the tests out in
#: this order; a group goes out at its first test's place); the order of the rest is
#: unchanged. Ranked by the last fresh-clone CI's durations (quiet machine, 2026-12-02), with
#: the demo's two tests (one ``demo_fast`` run, 40-55 s, then a browser) counted together and
#: the coverage studies now in benchmarks/ (their tests halved) left out
_LONG_FIRST = (
    "test_bayes_build_cache.py::test_fresh_processes_load_what_they_stored",
    "test_report_browser.py::test_demo_report_renders_in_chromium",  # group demo_fast, with:
    "test_cli.py::test_demo_prints_sections_and_the_truth",
    "test_bayes_adaptive.py::test_fit_replicates_identical_serially_on_a_process_pool_and_on_dask",
    "test_sbc_parallel.py::",
    "test_notebooks.py::test_notebook_runs_in_fast_mode[04",
    "test_notebooks.py::test_notebook_runs_in_fast_mode[08",
    "test_notebooks.py::test_notebook_runs_in_fast_mode[07",
    "test_notebooks.py::test_notebook_runs_in_fast_mode[03",
    "test_bayes_jax.py::test_fit_with_numpyro_end_to_end",
    "test_docs.py::",
    "test_notebooks.py::test_notebook_runs_in_fast_mode",
    "test_docstrings.py::test_docstring_examples_run[hierbench.bayes._sampler._fit]",
    "test_bayes_defaults_slow.py::test_sbc_small_beta_binomial",
    "test_zoo.py::test_reference_refit_within_mcse",
    "test_report_browser.py::test_metr_report_renders_in_chromium",
    "test_io.py::test_a_fit_saved_by_the_cli_opens_in_plain_arviz",
)


def _long_rank(item) -> int:
    """The position of the first ``_LONG_FIRST`` key in the test's id; ``len(_LONG_FIRST)`` if none."""
    return next((i for i, key in enumerate(_LONG_FIRST) if key in item.nodeid), len(_LONG_FIRST))


#: session fixtures that cost a fit or a demo run (tens of seconds): their tests share one worker
_SHARED_SESSION = ("demo_fast", "metr_html")
#: where the first xdist worker writes {test id: group} for the controller's scheduler
_GROUPS_ENV = "HIERBENCH_TEST_GROUPS"


def _shared_group(item) -> str | None:
    """The group of a test that reads a module-scoped fixture or one of ``_SHARED_SESSION``."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    for name in item.fixturenames:
        if name in _SHARED_SESSION:
            return name
        if name in defs and defs[name][-1].scope == "module":
            return item.nodeid.split("::", 1)[0]
    return None


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        config._hb_groups_dir = tempfile.mkdtemp(prefix="hierbench-groups-")  # the workers inherit the env
        os.environ[_GROUPS_ENV] = os.path.join(config._hb_groups_dir, "groups.json")


def pytest_unconfigure(config):
    if getattr(config, "_hb_groups_dir", None):
        shutil.rmtree(config._hb_groups_dir, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_long_rank)  # stable: the rest keep their collection order
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker == "gw0" and os.environ.get(_GROUPS_ENV):  # every worker collects the same tests
        groups = {item.nodeid: g for item in items if (g := _shared_group(item)) is not None}
        tmp = os.environ[_GROUPS_ENV] + ".tmp"
        Path(tmp).write_text(json.dumps(groups))
        os.replace(tmp, os.environ[_GROUPS_ENV])


@pytest.hookimpl(optionalhook=True)  # an xdist hook: no error if xdist is off
def pytest_xdist_make_scheduler(config, log):
    """Each free worker takes the next test in the order above, or the next group whole.

    A group (``_shared_group``: the tests of a module-scoped fixture, or of an expensive
    session fixture) goes to one worker, so its fixture is built once per run rather than
    once per worker that meets it; every other test is its own unit, so the longest tests,
    sorted first, start first on whichever worker is free. (xdist's own ``loadgroup`` does
    not group under pytest 9.2: pytest-xdist issue 1386.)
    """
    from xdist.scheduler import LoadScopeScheduling

    if config.getoption("dist") != "load":  # an explicit --dist other than -n's default wins
        return None
    config.option.loadscopereorder = False  # keep the order above

    class SharedFixtureScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first called once every worker has collected
                path = Path(os.environ.get(_GROUPS_ENV, ""))
                self.groups = json.loads(path.read_text()) if path.is_file() else {}
            return self.groups.get(nodeid, nodeid)

    return SharedFixtureScheduling(config, log)
