import os
from pathlib import Path

import pytest

# Imported here, once, before any test runs: under xdist the controller imports the module
# of every warning a worker reports, from two threads at once; a first import of
# hierbench.freq from two threads can deadlock on its internal import cycle (seen as an
# INTERNALERROR "partially initialized module 'hierbench.freq._profiles'").
import hierbench.freq  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


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


#: the longest tests (30-70 s each on 2 cores: notebooks, cold compiles, worker pools, the docs
#: build), started first so that the two xdist workers finish together instead of one of them
#: running a long test alone at the end; the order of the rest is unchanged
_LONG_FIRST = (
    "test_bayes_defaults_slow.py::test_same_draws_on_cold_and_warm_caches",
    "test_bayes_adaptive.py::test_fit_replicates_identical_serially_on_a_process_pool_and_on_dask",
    "test_notebooks.py::test_notebook_runs_in_fast_mode",
    "test_docs.py::",
    "test_zoo.py::test_reference_refit_within_mcse",
    "test_io.py::test_a_fit_saved_by_the_cli_opens_in_plain_arviz",
)


def pytest_collection_modifyitems(config, items):
    def long(item) -> bool:
        return any(key in item.nodeid for key in _LONG_FIRST)

    items[:] = [i for i in items if long(i)] + [i for i in items if not long(i)]
