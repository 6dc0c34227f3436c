"""plot_d_study says which size it holds, and takes the Bayes line at the same sizes by label.

The expected dashed line is a Bayes stand-in built here from the D-study itself (twice its
``var_paired_diff``, with the ``n_run`` order reversed), so its values at ``n_run = 1`` are
``sqrt(2 * var_paired_diff(n_run=1))``, known without the plot.
"""

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import variance_components

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(rng.normal(size=(4, 10, 3)), dims=("agent", "task", "run")))
        return vc.d_study({"task": [10, 20, 40], "run": [1, 3]})


def _close(ax):
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_a_size_taken_at_the_first_of_several_is_named(grid):
    from hierbench.report import plot_d_study

    ax = plot_d_study(grid)  # x = n_task; n_run has 1 and 3: held at 1
    assert ax.get_title(loc="left") == "held: n_run = 1"
    _close(ax)
    ax = plot_d_study(grid, hue="n_run")  # nothing held
    assert ax.get_title(loc="left") == ""
    _close(ax)


def test_bayes_line_is_taken_by_label_not_by_position(grid):
    from hierbench.report import plot_d_study

    bayes = grid.isel(n_run=[1, 0])  # n_run = [3, 1]: its first is not d's
    bayes = bayes.assign(var_paired_diff=2 * bayes.var_paired_diff)
    ax = plot_d_study(grid, bayes=bayes)
    dashed = next(line for line in ax.get_lines() if line.get_label().endswith("(Bayes)"))
    want = np.sqrt(2 * grid.var_paired_diff.sel(n_run=1).values)
    np.testing.assert_allclose(dashed.get_ydata(), want, rtol=1e-12)
    _close(ax)


def test_bayes_without_the_held_size_is_refused(grid):
    from hierbench.report import plot_d_study

    with pytest.raises(ValueError, match=r"`bayes` has no n_run = 1.*\[3\]"):
        plot_d_study(grid, bayes=grid.sel(n_run=[3]))
    with pytest.raises(ValueError, match=r"`bayes` has no size 'n_run'"):
        plot_d_study(grid, bayes=grid.drop_vars("n_run"))  # a dim without labels: no match by label
    with pytest.raises(ValueError, match=r"`bayes` varies along \['n_cluster'\]"):
        plot_d_study(grid, bayes=grid.expand_dims(n_cluster=[2, 4]))
