"""report: a fit and a log that disagree on task clusters, and the two halves' tables that disagree.

The clustered fixtures are tiny crossed fits (draws=100, tune=100, chains=2) of
one simulated log with four task clusters, fitted once per module.
"""

import re
import warnings

import pytest

from hierbench.report import FitDataMismatchError
from hierbench.report import build
from hierbench.report import check_fit_data
from hierbench.report._match import cluster_note
from hierbench.testing import simulate_eval

pytest.importorskip("pymc")


def _fit(ds):
    from hierbench import bayes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny fit does not converge; not what is tested here
        return bayes.fit(bayes.build_crossed(ds), draws=100, tune=100, chains=2, rng=0, progress=False)


@pytest.fixture(scope="module")
def clustered():
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, n_clusters=4, rng=0)
    return ds, _fit(ds)


@pytest.fixture(scope="module")
def unclustered_fit(clustered):
    return _fit(clustered[0].drop_vars("cluster"))


def test_fit_with_clusters_refuses_a_log_read_without_them(clustered):
    ds, fit = clustered
    check_fit_data(fit, ds)  # the log it was fitted to passes
    n_clusters = len(set(map(str, ds["cluster"].values)))  # from the simulated log, not the fit
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, ds.drop_vars("cluster"))
    msg = str(err.value)
    assert f"the fit's model has task clusters ({n_clusters} clusters" in msg
    assert "the data has no cluster labels" in msg
    assert "`--cluster`" in msg  # how to fix it


def test_fit_with_clusters_refuses_a_task_in_another_cluster(clustered):
    ds, fit = clustered
    task = str(ds["task"].values[5])
    was = str(ds["cluster"].values[5])
    labels = ds["cluster"].values.copy()
    labels[5] = "elsewhere"
    with pytest.raises(FitDataMismatchError, match=rf"1 tasks in another cluster .*'{task}': fit '{was}', data 'elsewhere'"):
        check_fit_data(fit, ds.assign_coords(cluster=("task", labels)))


def test_report_refuses_the_mismatched_pair(clustered, tmp_path):
    ds, fit = clustered
    with pytest.raises(FitDataMismatchError, match="has no cluster labels"):
        build(fit, ds.drop_vars("cluster"), path=tmp_path / "r.md", n_resamples=99, progress=False)
    assert not (tmp_path / "r.md").exists()


def test_clusters_in_the_log_only_are_said_in_the_report(clustered, unclustered_fit, tmp_path):
    ds, fit = clustered
    assert cluster_note(fit, ds) is None  # both halves use the clusters
    assert cluster_note(unclustered_fit, ds.drop_vars("cluster")) is None  # neither does
    check_fit_data(unclustered_fit, ds)  # a model without clusters is a legitimate fit of this log
    n_clusters = len(set(map(str, ds["cluster"].values)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = build(unclustered_fit, ds, path=tmp_path / "r.md", n_resamples=99, progress=False).read_text()
    note = re.search(r"Clusters in one half only: [^\n]*", text)
    assert note is not None
    assert f"{n_clusters} clusters" in note.group(0)
    assert "The frequentist half" in note.group(0) and "the Bayesian half" in note.group(0)
