"""The progress bar of long loops (issues 14, 24): tqdm's bar, shown when asked, silent otherwise."""

import io

import numpy as np
import xarray as xr

from hierbench._base import Progress
from hierbench.design import replay
from hierbench.freq import bootstrap_ci
from hierbench.testing import simulate_eval


def test_bar_counts_to_its_total_and_is_silent_when_disabled_or_not_watched():
    out = io.StringIO()
    with Progress(5, "steps", enabled=True, delay=0.0, stream=out) as bar:
        for _ in range(5):
            bar.update(1)
    text = out.getvalue()
    last = text.rsplit("\r", 1)[-1]  # the bar as it was left on the terminal
    assert text.endswith("\n") and last.startswith("steps: 100%") and "5/5" in last
    import ipykernel  # noqa: F401  - imported is not running: any library (or test) may import it

    for enabled in (False, None):  # None: a StringIO is no terminal, and no kernel runs here
        quiet = io.StringIO()
        with Progress(5, "steps", enabled=enabled, delay=0.0, stream=quiet) as bar:
            bar.update(5)
        assert quiet.getvalue() == ""


def test_bootstrap_and_replay_draw_the_bar_only_when_asked(capsys):
    ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=2, rng=0)
    a = bootstrap_ci(ds, n_resamples=500, rng=1, progress=False)
    assert capsys.readouterr().err == ""
    b = bootstrap_ci(ds, n_resamples=500, rng=1)  # default: not a terminal under pytest
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(a.ci.values, b.ci.values)  # the bar never touches the draws
    bank = xr.DataArray((np.arange(40 * 3).reshape(40, 3) % 3 == 0).astype(float), dims=("task", "run"))
    replay(bank, designs=("uniform",), budgets=(10, 20), n_rep=50, rng=0, progress=False)
    assert capsys.readouterr().err == ""


def test_endless_bar_names_its_stage_and_a_late_bar_never_draws():
    out = io.StringIO()
    with Progress(None, "after sampling", enabled=True, delay=0.0, stream=out) as bar:
        bar.stage("convergence diagnostics")
    last = out.getvalue().rsplit("\r", 1)[-1]
    assert last.startswith("after sampling:") and "convergence diagnostics" in last
    quiet = io.StringIO()
    with Progress(3, "slow to start", enabled=True, delay=60.0, stream=quiet) as bar:
        bar.update(3)
        bar.stage("done")
    assert quiet.getvalue() == "" and bar.done == 3


def test_progress_env_var_silences_a_watched_process(monkeypatch):
    from hierbench._base import watched

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert watched(Tty())
    monkeypatch.setenv("HIERBENCH_PROGRESS", "0")
    assert not watched(Tty())
    out = Tty()
    with Progress(3, "steps", delay=0.0, stream=out) as bar:
        bar.update(3)
    assert out.getvalue() == ""
