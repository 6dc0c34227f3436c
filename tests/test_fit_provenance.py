"""A fit records which file and reader its data came from (audit I, finding 11).

A saved fit kept only the hash of the counts its model saw: nothing said which log that
was. The builders now copy the reader's record (``source``, ``reader``, ``errors``, the
agent and task columns, the score kind) into the fit's root attrs as ``hierbench_data_<name>``.
Expected values: the file name and columns written by the test itself.
"""

from __future__ import annotations

import pandas as pd
import pytest

from hierbench.data import from_records
from hierbench.data import read_battles


def _log(tmp_path):
    rows = [{"model": m, "task_id": f"t{t}", "resolved": int((t + i) % 3 == 0)}
            for i, m in enumerate(["a", "b", "c"]) for t in range(6)]  # fmt: skip
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, from_records(path, agent="model", task="task_id", score="resolved")


@pytest.mark.parametrize("builder", ["build_beta_binomial", "build_crossed", "build_mixed"])
def test_every_builder_carries_the_data_source(tmp_path, builder):
    import hierbench.bayes as hbb

    path, ds = _log(tmp_path)
    args = ("score ~ 1 + (1|agent) + (1|task)",) if builder == "build_mixed" else ()
    root = getattr(hbb, builder)(ds, *args).hierbench["root_attrs"]
    assert root["hierbench_data_source"] == str(path)
    assert root["hierbench_data_reader"] == "from_records"
    assert root["hierbench_data_agent_column"] == "model" and root["hierbench_data_task_column"] == "task_id"


def test_bradley_terry_carries_the_battle_source(tmp_path):
    import hierbench.bayes as hbb

    path = tmp_path / "battles.csv"
    pd.DataFrame({"left": ["x", "y", "z", "x"], "right": ["y", "z", "x", "z"],
                  "winner": ["left", "tie", "right", "left"]}).to_csv(path, index=False)  # fmt: skip
    root = hbb.build_bradley_terry(read_battles(path)).hierbench["root_attrs"]
    assert root["hierbench_data_source"] == str(path) and root["hierbench_data_reader"] == "read_battles"


@pytest.mark.slow  # one small fit, saved and loaded
def test_a_saved_fit_says_where_its_data_came_from(tmp_path):
    import hierbench.bayes as hbb
    from hierbench.io import load_fit
    from hierbench.io import save_fit

    path, ds = _log(tmp_path)
    fit = hbb.fit(hbb.build_beta_binomial(ds), rng=0, progress=False)
    save_fit(fit, tmp_path / "fit.nc")
    back = load_fit(tmp_path / "fit.nc")
    assert back.attrs["hierbench_data_source"] == str(path)
    assert back.attrs["hierbench_data_errors"] == ds.attrs["errors"]
