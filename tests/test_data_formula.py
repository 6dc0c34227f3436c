"""Tests of hierbench.data.model_design: a formula resolved against an eval dataset.

Independent references: design matrices built by hand with pandas dummies, and
designs whose (non-)identifiability is known by construction.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import PartialCreditError
from hierbench.data import DEFAULT_FORMULA
from hierbench.data import ConfoundedTermWarning
from hierbench.data import EvalDataError
from hierbench.data import FormulaError
from hierbench.data import InconsistentAttributeWarning
from hierbench.data import from_records
from hierbench.data import model_design


def _board(scaffolds, models, n_tasks=6, n_runs=2, seed=0, score=None):
    """Agents = (scaffold, model) pairs, a task tier and a numeric task feature."""
    rng = np.random.default_rng(seed)
    A = len(scaffolds)
    s = rng.integers(0, 2, (A, n_tasks, n_runs)).astype(float) if score is None else score
    return xr.Dataset(
        {"score": (("agent", "task", "run"), s)},
        coords={
            "agent": [f"{a}/{b}" for a, b in zip(scaffolds, models, strict=True)],
            "task": [f"t{i}" for i in range(n_tasks)],
            "scaffold": ("agent", list(scaffolds)),
            "model": ("agent", list(models)),
            "tier": ("task", ["easy", "hard"] * (n_tasks // 2)),
            "minutes": ("task", np.geomspace(1, 100, n_tasks)),
        },
    )


def test_fixed_matrix_equals_hand_built_dummies_and_levels_are_located():
    ds = _board(["s1", "s1", "s2", "s2"], ["m1", "m2", "m1", "m2"])
    d = model_design("score ~ scaffold * tier + np.log2(minutes) + (1|model) + (1|task)", ds)
    f = d.frame
    ref = np.column_stack([
        np.ones(len(f)),
        (f.scaffold == "s2").to_numpy(float),
        (f.tier == "hard").to_numpy(float),
        np.log2(f.minutes.to_numpy()),
        ((f.scaffold == "s2") & (f.tier == "hard")).to_numpy(float),
    ])  # fmt: skip
    cols = ["Intercept", "scaffold[s2]", "tier[hard]", "np.log2(minutes)", "scaffold[s2]:tier[hard]"]
    np.testing.assert_array_equal(d.X[:, [d.coef.index(c) for c in cols]], ref)
    assert d.variables == {"scaffold": "agent", "model": "agent", "tier": "task", "minutes": "task", "task": "task"}
    t0 = d.random[0]
    assert (t0.name, t0.level, t0.levels.tolist()) == ("1|model", "agent", ["m1", "m2"])
    # rows are the cells that ran; y and n are their success counts and runs
    assert d.row_level == "cell" and d.X.shape[0] == 4 * 6
    np.testing.assert_array_equal(d.y, ds.score.sum("run").values.ravel())
    np.testing.assert_array_equal(d.n, np.full(24, 2.0))
    assert "binomial" in repr(d) and "(1|model)" in repr(d)


def test_unknown_names_are_refused_with_what_the_data_holds():
    ds = _board(["s1", "s2"], ["m1", "m1"])
    with pytest.raises(FormulaError, match=r"uses \['cutoff'\].*Agent-level: \['agent', 'model', 'scaffold'\]"):
        model_design("score ~ cutoff + (1|task)", ds)
    with pytest.raises(FormulaError, match="response 'grade' must be a per-run variable"):
        model_design("grade ~ 1 + (1|task)", ds)


def _log_with_columns(agent: str, task: str) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = [(f"m{i}", f"q{j}", r, float(rng.integers(0, 2))) for i in range(3) for j in range(5) for r in range(2)]
    return pd.DataFrame(rows, columns=[agent, task, "run", "score"])


def test_a_column_the_reader_read_as_agent_or_task_is_named_with_its_dim():
    ds = from_records(_log_with_columns("model", "problem"), agent="model", task="problem", run="run")
    assert (ds.attrs["agent_column"], ds.attrs["task_column"]) == ("model", "problem")
    with pytest.raises(FormulaError, match=r"'model' is the column the reader read as the agents.*write agent, e\.g\. \(1\|agent\)"):
        model_design("score ~ 1 + (1|model) + (1|task)", ds)
    with pytest.raises(FormulaError, match=r"'model' is the column .* agents.*'problem' is the column .* tasks.*write task"):
        model_design("score ~ 1 + (1|model) + (1|problem)", ds)
    # another unknown name: the dims and this log's columns are named, whatever the typo
    with pytest.raises(FormulaError, match=r"uses \['prob'\].*dims `agent` and `task` \(here the columns 'model' and 'problem'\)"):
        model_design("score ~ 1 + (1|agent) + (1|prob)", ds)
    # a dataset built by hand records no columns: the rule alone
    bare = ds.drop_attrs()
    with pytest.raises(FormulaError, match=r"uses \['model'\].*log's agent and task columns, whatever they are called, on the dims `agent` and `task`: "):
        model_design("score ~ 1 + (1|model) + (1|task)", bare)
    # the read report is not for `attrs=` to overwrite
    with pytest.raises(EvalDataError, match=r"not overwrite the read report; it sets \['agent_column'\]"):
        from_records(_log_with_columns("agent", "task"), run="run", attrs={"agent_column": "x"})


def test_a_coord_along_agent_groups_by_its_own_values_and_says_so():
    ds = _board(["s1", "s2", "s3"], ["m1", "m1", "m2"])  # agents s1/m1, s2/m1, s3/m2
    d = model_design("score ~ 1 + (1|model) + (1|task)", ds)
    t = d.random[0]
    assert t.levels.tolist() == ["m1", "m2"]  # by model, not by agent
    # each design row's level is its agent's model (read off the coord by hand)
    model_of = dict(zip(ds.agent.values, ds.model.values, strict=True))
    assert t.levels[t.codes].tolist() == [model_of[a] for a in d.frame.agent]
    assert "2 levels for 3 agents" in d.decisions["grouping (1|model)"]
    assert "grouping (1|model): (1|model) groups by the coord model along agent" in repr(d)
    # one model per agent: the same grouping as (1|agent), nothing to say
    one = model_design("score ~ 1 + (1|model) + (1|task)", _board(["s1", "s2"], ["m1", "m2"]))
    assert not any(k.startswith("grouping") for k in one.decisions)


def test_covariate_not_constant_within_task_is_refused():
    """The reader refuses a task coord with two values in one task; one empty in some records of a task
    takes the one value the others hold (warned, counted), and a formula may then use it: the fit reads
    the one value per task the data hold, checked here against the records.
    """
    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t1", "t1", "t2"],
                       "score": [1.0, 0.0, 1.0, 0.0], "tier": ["easy", "hard", "easy", "hard"]})  # fmt: skip
    with pytest.raises(EvalDataError, match="`task_coords` column 'tier' in DataFrame must hold one value per "
                       r"task .*; 1 of 2 tasks hold two or more, e.g. 't1': 'easy' and 'hard'\."):
        from_records(df, task_coords=["tier"])
    with pytest.warns(InconsistentAttributeWarning, match=r"'tier' .* empty in some records of 1 task \['t1'\]"):
        ds = from_records(df.assign(tier=["easy", None, "easy", "hard"]), task_coords=["tier"])
    assert json.loads(ds.attrs["inconsistent_attributes"]) == {"task tier": 1}
    d = model_design("score ~ tier + (1|agent)", ds)
    assert d.frame.set_index("task")["tier"].groupby(level=0).unique().map(list).to_dict() == {
        "t1": ["easy"], "t2": ["hard"]}  # the one value per task the records hold (t1's empty record filled)
    assert d.X.shape[1] == 2  # intercept and tier's one contrast
    table = pd.DataFrame({"family": ["x", "y", "z"]}, index=["a", "a", "b"])
    with pytest.raises(FormulaError, match=r"'family' is not constant within its agent: 1 agents.*\['a'\]"):
        model_design("score ~ family + (1|task)", ds.drop_vars("tier"), agent_coords=table)


def test_agent_table_joins_and_missing_values_are_refused():
    ds = _board(["s1", "s2", "s1", "s2"], ["m1", "m1", "m2", "m2"])
    ds = ds.drop_vars(["scaffold", "model"])
    table = pd.DataFrame({"cutoff": [2023.0, 2024.0, np.nan, 2024.5]}, index=ds.agent.values)
    with pytest.raises(FormulaError, match=r"'cutoff' is missing for 6 design rows.*'s1/m2'"):
        model_design("score ~ cutoff + (1|task)", ds, agent_coords=table)
    with pytest.raises(FormulaError, match="no row for 1 agents"):
        model_design("score ~ cutoff + (1|task)", ds, agent_coords=table.iloc[:3])


def test_aliased_fixed_effects_are_refused_by_name():
    """Scaffold s3 never runs a hard task: its s3:hard column is all zero (a combination never run)."""
    ds = _board(["s1", "s2", "s3"], ["m1", "m1", "m1"])
    s = ds.score.values.copy()
    s[2, 1::2, :] = np.nan  # scaffold s3 never on a hard task
    ds["score"] = (("agent", "task", "run"), s)
    with pytest.raises(FormulaError, match=r"\['scaffold\[s3\]:tier\[hard\]'\] are linear combinations of the others"):
        model_design("score ~ scaffold * tier + (1|task)", ds)


def test_unidentified_random_terms_are_refused():
    ds = _board(["s1", "s1", "s2", "s2"], ["m1", "m2", "m1", "m2"])
    with pytest.raises(FormulaError, match=r"\(1\|scaffold\) is determined by the fixed effects"):
        model_design("score ~ scaffold + (1|scaffold) + (1|task)", ds)
    with pytest.raises(FormulaError, match=r"\(1\|agent\) and \(1\|scaffold:model\) group the data identically"):
        model_design("score ~ 1 + (1|agent) + (1|scaffold:model) + (1|task)", ds)
    with pytest.raises(FormulaError, match="single level"):
        model_design("score ~ 1 + (1|task)", ds.isel(task=[0]))


def test_scaffold_seen_with_one_model_only_is_warned_and_named():
    """6 agents: s1 and s2 run with two models each, s3 with m1 only (an unbalanced crossing)."""
    ds = _board(["s1", "s1", "s2", "s2", "s3", "s3"], ["m1", "m2", "m1", "m2", "m1", "m1"])
    ds = ds.assign_coords(agent=[f"a{i}" for i in range(6)])
    with pytest.warns(ConfoundedTermWarning, match=r"1 of 3 scaffold levels occur with one model only, e.g. \['s3'\]"):
        d = model_design("score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)", ds)
    assert any("confounded scaffold" in k for k in d.decisions)


def test_families_and_the_grade_scale():
    ds = _board(["s1", "s2"], ["m1", "m1"])
    assert model_design("score ~ 1 + (1|task)", ds).family == "binomial"
    partial = ds.copy()
    partial["score"] = partial.score * 0.5
    assert model_design("score ~ 1 + (1|task)", partial).family == "fractional"
    with pytest.raises(PartialCreditError, match="family='binomial'"):
        model_design("score ~ 1 + (1|task)", partial, family="binomial")
    grades = ds.copy()
    grades["score"] = grades.score * 0.5 + 0.25  # grades 0.25 and 0.75
    d = model_design("score ~ scaffold + (1|task)", grades, family="ordinal")
    assert d.categories.tolist() == [0.25, 0.75] and "Intercept" not in d.coef
    assert d.grade_counts.sum() == d.n.sum()
    with pytest.raises(FormulaError, match=r"grades \[0.5\] of the scale \[0.25, 0.5, 0.75\] never occur"):
        model_design("score ~ scaffold + (1|task)", grades, levels=[0.25, 0.5, 0.75])
    with pytest.raises(FormulaError, match=r"values \[0.75\] outside `levels`"):
        model_design("score ~ scaffold + (1|task)", grades, levels=[0.0, 0.25])


def test_grades_read_with_their_scale_are_fitted_as_grades():
    """from_records(score_levels=...) keeps each grade as its place on the scale, (g - 1) / 4 for
    1..5; an ordinal design of `score` fits the grades themselves, on that scale.
    """
    from hierbench.data import EvalDataError

    df = pd.DataFrame({"agent": ["a", "a", "b", "b", "c", "c"], "task": ["t1", "t2"] * 3,
                       "score": [1, 3, 5, 2, 2, 4]})  # fmt: skip
    scale = [1, 2, 3, 4, 5]
    ds = from_records(df, score_levels=scale)
    assert ds.score.isel(run=0).values.tolist() == [[0.0, 0.5], [1.0, 0.25], [0.25, 0.75]]
    assert ds.attrs["score_levels"] == "[1.0, 2.0, 3.0, 4.0, 5.0]"
    f = "score ~ 1 + (1|agent)"
    d = model_design(f, ds)
    assert d.family == "ordinal" and d.categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert d.grade_counts.sum(0).tolist() == [1.0, 2.0, 1.0, 1.0, 1.0]  # grades 1, 2 2, 3, 4, 5
    assert model_design(f, ds, levels=scale).grade_counts.tolist() == d.grade_counts.tolist()
    differ = r"`levels` \[0.0, 1.0, 2.0, 3.0, 4.0\] differ from the grade scale `score` was read on"
    with pytest.raises(FormulaError, match=differ):
        model_design(f, ds, levels=[0, 1, 2, 3, 4])
    # another family fits the places in [0, 1]
    assert model_design(f, ds, family="fractional").y.tolist() == [0.0, 0.5, 1.0, 0.25, 0.25, 0.75]
    edited = ds.copy()
    edited["score"] = edited.score.where(edited.score != 0.25, 0.3)
    with pytest.raises(FormulaError, match=r"2 scores are no grade's place, e.g. \[0.3\]"):
        model_design(f, edited)
    # off the scale: refused naming the column, the rule, the rows and the values; never rounded
    off = (
        r"`score` column 'score' in DataFrame holds grades outside `score_levels` "
        r"1, 2, 3, 4 \(each grade must be one of them\); rows \[2\] hold \[5\]"
    )
    with pytest.raises(EvalDataError, match=off):
        from_records(df, score_levels=[1, 2, 3, 4])
    with pytest.raises(EvalDataError, match=r"`score_levels` must list at least 2 increasing"):
        from_records(df, score_levels=[1, 3, 2])
    unit = r"must lie in \[0, 1\]; rows \[1, 2, 3, 4, 5\].*give their scale as `score_levels`"
    with pytest.raises(EvalDataError, match=unit):
        from_records(df)


def test_grades_written_as_words_are_read_as_their_places_in_order():
    """score_levels=["no", "perhaps", "yes"]: label k of L is kept as k / (L - 1), the labels in
    attrs; the ordinal design fits their order (grades 0..L-1). Expected places are written by
    hand, the grade counts are pandas' own.
    """
    df = pd.DataFrame({"agent": list("aaabbbccc"), "task": ["t1", "t2", "t3"] * 3,
                       "score": ["no", "perhaps", "yes", "no", "no", "perhaps", "yes", "yes", "no"]})  # fmt: skip
    ds = from_records(df, score_levels=["no", "perhaps", "yes"])
    by_hand = {"no": 0.0, "perhaps": 0.5, "yes": 1.0}
    assert ds.score.isel(run=0).values.ravel().tolist() == [by_hand[v] for v in df["score"]]
    assert ds.attrs["score_levels"] == "[0.0, 1.0, 2.0]"
    assert ds.attrs["score_labels"] == '["no", "perhaps", "yes"]'
    d = model_design("score ~ 1 + (1|agent)", ds)
    assert d.family == "ordinal" and d.categories.tolist() == [0.0, 1.0, 2.0]
    counts = df["score"].value_counts()
    assert d.grade_counts.sum(0).tolist() == [counts["no"], counts["perhaps"], counts["yes"]]
    # four labels: places 0, 1/3, 2/3, 1 (equally spaced); a judge's letter grades
    four = from_records(df.assign(score=list("ABCDDCBAA")), score_levels=["A", "B", "C", "D"])
    np.testing.assert_allclose(four.score.values.ravel(), [0, 1 / 3, 2 / 3, 1, 1, 2 / 3, 1 / 3, 0, 0])
    # texts that all parse as numbers are a numeric scale, its spacing kept: 1, 2, 4 -> 0, 1/3, 1
    nums = from_records(df.assign(score=["1", "2", "4"] * 3), score_levels=["1", "2", "4"])
    np.testing.assert_allclose(nums.score.values.ravel(), [0, 1 / 3, 1] * 3)
    assert "score_labels" not in nums.attrs
    # an errored run under errors="fail" is the lowest grade, as for numeric grades
    err = from_records(df.assign(score=[None, *df["score"][1:]], e=[True] + [False] * 8), error="e",
                       score_levels=["no", "perhaps", "yes"])  # fmt: skip
    assert err.score.isel(run=0).values.ravel()[0] == 0.0


def test_grades_written_as_words_refuse_anything_not_exactly_a_label():
    from hierbench.data import EvalDataError

    df = pd.DataFrame({"agent": list("aaab"), "task": ["t1", "t2", "t3", "t1"],
                       "score": ["no", "Yes", "maybe", " no"]})  # fmt: skip
    labels = ["no", "perhaps", "yes"]
    with pytest.raises(EvalDataError, match=(
        r"`score` column 'score' in DataFrame holds values that are not labels of `score_levels` "
        r"\['no', 'perhaps', 'yes'\] \(each grade must be one of them, written exactly\): rows \[1, 2, 3\] "
        r"hold 'Yes' \(1 row\), 'maybe' \(1 row\), ' no' \(1 row\); near misses \(labels are matched "
        r"exactly, never case-folded or stripped\): 'Yes' is not 'yes', ' no' is not 'no' \(Rows are the records "
        r"read, counted from 0: a CSV's header and a JSONL file's blank lines are not among them\.\)$"
    )):  # fmt: skip
        from_records(df, score_levels=labels)
    ok = df.assign(score=["no", "yes", "perhaps", "no"])
    with pytest.raises(EvalDataError, match=r"`score_levels` mixes numbers and words: \['0', 'perhaps', 'yes'\]"):
        from_records(ok, score_levels=["0", "perhaps", "yes"])
    with pytest.raises(EvalDataError, match=r"labels \[' perhaps'\] are empty or have surrounding spaces.*e\.g\. no,perhaps,yes"):
        from_records(ok, score_levels=["no", " perhaps", "yes"])
    with pytest.raises(EvalDataError, match=r"at least 2 distinct labels.*\(repeated: \['no'\]\)"):
        from_records(ok, score_levels=["no", "no", "perhaps", "yes"])
    with pytest.raises(EvalDataError, match=r"must be a list of the grades.*write \['no', 'perhaps', 'yes'\]"):
        from_records(ok, score_levels="no,perhaps,yes")
    with pytest.raises(EvalDataError, match=r"`score_levels` holds \[None\]"):
        from_records(ok, score_levels=["no", None, "yes"])
    # words without score_levels: the numeric rule's message points at the labels
    with pytest.raises(EvalDataError, match=r"must be numeric.*give their labels in order as `score_levels`"):
        from_records(ok)
    # a model's `levels` as words must be the labels the reader read `score` from, in that order:
    # the design is then the one without `levels` (and keeps the labels)
    ds = from_records(ok, score_levels=labels)
    plain, named = model_design("score ~ 1 + (1|task)", ds), model_design("score ~ 1 + (1|task)", ds, levels=labels)
    assert named.labels == plain.labels == ("no", "perhaps", "yes") and named.categories.tolist() == [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(named.grade_counts, plain.grade_counts)
    with pytest.raises(FormulaError, match=(
        r"^`levels` \['yes', 'perhaps', 'no'\] are labels, but `score` was read from the labels "
        r"\['no', 'perhaps', 'yes'\] \(attrs\['score_labels'\]\): give those, in that order, or leave `levels` out$"
    )):  # fmt: skip
        model_design("score ~ 1 + (1|task)", ds, levels=labels[::-1])
    coded = from_records(ok.assign(score=ok["score"].map({"no": 0, "perhaps": 1, "yes": 2})), score_levels=[0, 1, 2])
    assert model_design("score ~ 1 + (1|task)", coded).labels is None
    with pytest.raises(FormulaError, match=r"are labels, but `score` was not read from labels \(no attrs\['score_labels'\]\)"):
        model_design("score ~ 1 + (1|task)", coded, levels=labels)


def test_default_formula_and_bad_syntax():
    ds = _board(["s1", "s2"], ["m1", "m1"])
    d = model_design(None, ds)
    assert d.formula == DEFAULT_FORMULA and d.coef == ["agent[s1/m1]", "agent[s2/m1]"]
    assert [t.level for t in d.random] == ["task", "cell"]
    with pytest.raises(FormulaError, match="could not be parsed"):
        model_design("score ~ 1 + (1|task", ds)


@pytest.mark.parametrize("family", ["binomial", "fractional"])
@pytest.mark.parametrize(("n_agents", "n_runs"), [(1, 1), (1, 2), (3, 1)])
def test_a_random_term_whose_levels_hold_one_run_each_warns(n_agents, n_runs, family):
    # the crossed design rule in a formula's words: with one agent and one run per task, each
    # (1|task) level holds one run and its sd cannot be told apart from run-to-run noise; a second
    # run, or a second agent, gives every level more than one run
    from hierbench.bayes import UnidentifiedTermWarning
    from hierbench.bayes import build_mixed
    from hierbench.bayes import describe
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=n_agents, n_tasks=30, n_runs=n_runs, rng=0)
    if family == "fractional":
        data["score"] = data["score"] * 0.5 + 0.25  # scores in (0, 1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        design = model_design("score ~ 1 + (1|task)", data, family=family)
    said = [w for w in seen if issubclass(w.category, UnidentifiedTermWarning)]
    if (n_agents, n_runs) == (1, 1):
        assert len(said) == 1 and "random term (1|task): every task level holds one run" in str(said[0].message)
        assert "unidentified (1|task)" in design.decisions
        with pytest.warns(UnidentifiedTermWarning, match=r"\(1\|task\): every task level holds one run"):
            model = build_mixed(data, "score ~ 1 + (1|task)", family=family)
        assert "unidentified (1|task): True" in describe(model)
    else:
        assert not said and "unidentified (1|task)" not in design.decisions


def test_the_agent_task_term_is_left_to_the_builders_rule():
    # (1|agent:task) with one run per cell has its own decision (agent_task) and its own warning
    from hierbench.bayes import UnidentifiedTermWarning
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=1, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnidentifiedTermWarning)
        design = model_design("score ~ 0 + agent + (1|task) + (1|agent:task)", data)
    assert not any(k.startswith("unidentified") for k in design.decisions)


def test_an_ordinal_designs_repr_writes_its_scale_as_a_reader_does():
    """The repr printed the grade scale as the list repr "[1.0, 2.0, 3.0, 4.0, 5.0]"; the grades
    written here are 1 to 5, so the scale reads "1, 2, 3, 4, 5" (as the mean response's head does).
    """
    from hierbench.data import model_design

    grades = np.tile([1.0, 2.0, 3.0, 4.0, 5.0, 3.0], 4).reshape(3, 4, 2)
    ds = xr.Dataset({"score": (("agent", "task", "run"), grades)},
                    coords={"agent": list("abc"), "task": list("wxyz"), "run": [0, 1]})  # fmt: skip
    d = model_design("score ~ (1|agent) + (1|task)", ds, family="ordinal")
    assert "  scale: 1, 2, 3, 4, 5" in repr(d).splitlines()
    assert d.reader_scale(None)[1] == "mean grade (of score, scale 1, 2, 3, 4, 5)"
