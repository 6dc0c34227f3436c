"""One owner for the resolution-floor words (``floor_note``), and the Bayes pair note naming its p column.

Review s71, findings 4 and 5b: the report's ``resolution_words`` repeated the result's rule and read its
words at another level back from a caught warning; the demo patched ``bayes_pair_note``'s sentence with
``str.replace``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr


@pytest.fixture(scope="module")
def floored():
    """9 agents at solve rates 0.1 ... 0.9 (by task position) on 30 tasks: the bootstrap test with Holm at B = 199."""
    from hierbench.freq import compare_agents

    n_agents, n_tasks = 9, 30
    rate = np.linspace(0.1, 0.9, n_agents)
    pos = (np.arange(n_tasks) + 0.5) / n_tasks
    s = (pos[None, :] < rate[:, None]).astype(float)[..., None]
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": [f"a{k}" for k in range(n_agents)], "task": [f"t{i:02d}" for i in range(n_tasks)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare_agents(ds, test="bootstrap", adjust="holm", n_resamples=199, rng=0)


def test_floor_note_gives_each_levels_words_from_the_floor(floored):
    """By hand: the floor is 2 / (199 + 1) = 0.01; 36 pairs put Holm's first threshold at 0.05 / 36 = 0.00139
    (at 0.01: 0.000278), both below it, so no pair can be called, and reaching the threshold takes
    2 x 36 / 0.05 = 1,440 resamples (7,200 at 0.01). At 0.4 every Holm threshold 0.4 / (36 - k) >= 0.0111 is
    above the floor: nothing to say.
    """
    from hierbench.freq import floor_note

    own = floor_note(floored, 0.05)
    assert own.startswith("no bootstrap p-value here can go below 0.01, and 36 pairs put Holm's first threshold "
                          "at 0.00139: no pair can be called different")
    assert own.endswith("(raise `n_resamples` to at least 1,440).")
    other = floor_note(floored, 0.01)
    assert "first threshold at 0.000278" in other and other.endswith("at least 7,200).")
    assert floor_note(floored, 0.4) == ""
    # an adjustment other than the result's own, by name: BH's first threshold is Holm's
    assert "above Benjamini-Hochberg's first threshold 0.05/36 = 0.00139" in floor_note(floored, 0.05, "bh")


def test_the_warning_the_repr_and_the_report_say_floor_notes_words(floored):
    """``significant`` warns ``floor_note``'s words, the repr states them; the report takes them, raising no warning."""
    from hierbench.freq import PValueResolutionWarning
    from hierbench.freq import floor_note
    from hierbench.report._pairs import resolution_words

    for alpha in (0.05, 0.01):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            floored.significant(alpha)
        said = [str(w.message) for w in caught if issubclass(w.category, PValueResolutionWarning)]
        assert said == [floor_note(floored, alpha)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the report's words raise nothing now
            assert resolution_words(floored, alpha) == said[0]
    assert " ".join(floor_note(floored, 0.05).split()) in " ".join(repr(floored).split())


def test_a_bare_dataset_or_attrs_carry_their_own_levels_notes_alone(floored):
    """A saved Dataset holds the notes of its own level (0.05) only: at 0.01 there is nothing to read them from."""
    from hierbench.freq import floor_note
    from hierbench.report._pairs import resolution_words

    ds = floored.to_dataset()
    assert floor_note(dict(ds.attrs), 0.05) == ds.attrs["p_holm_note"] == floor_note(floored, 0.05) != ""
    assert floor_note(dict(ds.attrs), 0.05, "bh") == ds.attrs["p_bh_note"] != ""
    assert floor_note(dict(ds.attrs), 0.01) == "" and resolution_words(ds, 0.01) == ""
    assert resolution_words(ds, 0.05) == ds.attrs["p_holm_note"]


def _fit(model: str) -> xr.DataTree:
    fit = xr.DataTree()
    fit.attrs["hierbench_spec"] = f'{{"model": "{model}", "options": {{}}}}'
    if model == "mixed":
        fit.attrs["hierbench_model"] = "mixed"
    return fit


def test_bayes_pair_note_names_the_p_column_it_is_given():
    """The sentence, written out by hand, with and without the column; one pair and a formula fit's note too."""
    from hierbench.report import bayes_pair_note

    crossed = _fit("crossed")
    plain = ("Bayes P(a > b) is the posterior probability that a's expected score on a new task exceeds b's, pair "
             "by pair: not adjusted for the 3 pairs, so read it beside each pair's own p-value{}, not beside the "
             "simultaneous verdict.")
    assert bayes_pair_note(crossed, 3) == plain.format("")
    assert bayes_pair_note(crossed, 3, p_column="p (t)") == plain.format(" (`p (t)`)")
    assert bayes_pair_note(crossed, 1, p_column="p (permutation)").endswith(
        "read it beside the pair's p-value (`p (permutation)`).")
    mixed = bayes_pair_note(_fit("mixed"), 3, p_column="p (t)")
    assert "the counterpart of the pair's paired p-value (`p (t)`), which compares" in mixed
    assert "paired p-value, which compares" in bayes_pair_note(_fit("mixed"), 3)
