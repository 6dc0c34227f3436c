"""The pair sentence says what tasks as units leave out (audit R6).

SWE-bench bash-only: 221 of 300 pairs differ over its 500 tasks, 116 over its 12 repositories; a
reader of the first verdict alone was not told that the groups ask another question.
"""

from __future__ import annotations

import numpy as np

from hierbench.freq import compare_agents
from hierbench.report._pairs import TASK_UNIT_NOTE
from hierbench.report._pairs import pair_sentence
from hierbench.testing import simulate_eval


def test_tasks_as_units_get_the_note_and_clusters_do_not():
    ds, _ = simulate_eval(n_agents=3, n_tasks=24, n_runs=2, n_clusters=6, sd_cluster=0.5, rng=0)
    by_task = pair_sentence(compare_agents(ds.drop_vars("cluster"), n_resamples=99, rng=1))
    by_cluster = pair_sentence(compare_agents(ds, n_resamples=99, rng=1))
    assert f"pairs.{TASK_UNIT_NOTE}" in by_task and "over the 24 tasks" in by_task
    assert "task clusters" in by_cluster and TASK_UNIT_NOTE not in by_cluster
    assert np.char.count(by_task, "Each task is its own unit") == 1
