"""variance_components refuses a cluster coord that nests one task per cluster (audit S finding 1).

Expected counts come from pandas on the cluster coord, not from the code under test.
"""

import re

import numpy as np
import pandas as pd
import pytest

import hierbench as hb
from hierbench.freq import DesignError
from hierbench.testing import simulate_eval


def _eval(clusters):
    ds = simulate_eval(4, len(clusters), 3, rng=0)[0]
    return ds.assign_coords(cluster=("task", clusters))


def _n_clusters_with_2plus(ds) -> tuple[int, int]:
    per = pd.Series(ds.cluster.values).value_counts()
    return int((per >= 2).sum()), int(per.size)


def test_one_task_per_cluster_refused_naming_coord():
    ds = _eval([f"c{i}" for i in range(12)])
    k, n = _n_clusters_with_2plus(ds)
    with pytest.raises(DesignError) as err:
        hb.freq.variance_components(ds)
    msg = str(err.value)
    assert f"({k} of {n} levels of 'cluster' hold 2 or more 'task' levels)" in msg
    assert "`cluster` coord" in msg and "data.drop_vars('cluster')" in msg
    assert "cannot separate 'cluster' from 'task:cluster'" in msg


def test_one_task_per_cluster_refused_when_unbalanced():
    ds = _eval([f"c{i}" for i in range(10)])
    ds["score"] = ds.score.where(~((ds.agent == ds.agent[0]) & (ds.task == ds.task[0])))
    k, n = _n_clusters_with_2plus(ds)
    with pytest.raises(DesignError, match=re.escape(f"({k} of {n} levels of 'cluster'")):
        hb.freq.variance_components(ds)


def test_given_design_refused_without_coord_advice():
    ds = _eval([f"c{i}" for i in range(8)])
    df = ds.score.to_dataframe().reset_index()
    n = df["cluster"].nunique()
    with pytest.raises(DesignError) as err:
        hb.freq.variance_components(df, design="run:(agent*(task:cluster))")
    msg = str(err.value)
    assert f"(0 of {n} levels" in msg and "state a design without 'cluster'" in msg
    assert "coord" not in msg


def test_one_cluster_of_two_tasks_is_fitted(recwarn):
    ds = _eval(["a", "a"] + [f"c{i}" for i in range(10)])
    vc = hb.freq.variance_components(ds)
    assert np.all(np.isfinite(vc.components.values))
    per = pd.Series(ds.cluster.values).value_counts()
    assert sorted(vc._cluster_sizes["task"].tolist()) == sorted(per.tolist())
