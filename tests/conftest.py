import os
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def citations_counts(shared_data):
    """BradleyTerry2's ``citations`` as pair counts (4 journals, 6 pairs, no ties)."""
    from hierbench.data import from_pair_counts

    return from_pair_counts(
        shared_data / "bradley_terry" / "citations_binomial_pairs.csv",
        agent_a="journal1",
        agent_b="journal2",
        wins_a="win1",
        wins_b="win2",
    )


@pytest.fixture(scope="session")
def baseball_counts(shared_data):
    """BradleyTerry2's ``baseball`` (Agresti 1987) as pair counts, the home team first."""
    from hierbench.data import from_pair_counts

    return from_pair_counts(
        shared_data / "bradley_terry" / "baseball_agresti1987.csv",
        agent_a="home.team",
        agent_b="away.team",
        wins_a="home.wins",
        wins_b="away.wins",
        first_position=True,
    )


# Module-scoped fits and logs that several tests of one file read. Under `-n 2`
# with `--dist loadgroup` (pyproject's addopts) the tests sharing one of them run
# on one worker, so each is computed once rather than once per worker.
_SHARED_MODULE_FIXTURES = {
    "demo_html", "large_r", "llmfao_fit", "logs", "metr_html", "nutpie_fit", "rats_fit",
    "scaffold_fit", "sim_r2", "small_fits",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        shared = _SHARED_MODULE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}.{min(shared)}"))
