"""The side-by-side names the agents whose bootstrap interval is the narrower (audit F, F5).

It said of every agent of a formula fit that the bootstrap's interval is wider by the tasks'
spread; on the wine judges (8 bottles each) judge 5's was narrower (0.750 against 0.935).
Widths here are by hand.
"""

import pandas as pd

from hierbench.report._sec_side import _narrower_boot


def _wide(boot, bayes) -> pd.DataFrame:
    rows = {a: {"bootstrap bca lower": b[0], "bootstrap bca upper": b[1], "Bayes ETI lower": y[0], "Bayes ETI upper": y[1]}
            for a, b, y in zip(["j1", "j2", "j5"], boot, bayes, strict=True)}  # fmt: skip
    return pd.DataFrame.from_dict(rows, orient="index")


def test_the_agents_with_the_narrower_bootstrap_are_named_and_counted():
    wide = _wide([(3.0, 4.2), (2.0, 3.5), (2.625, 3.375)], [(3.1, 4.0), (2.2, 3.3), (2.558, 3.493)])
    text = _narrower_boot(wide, "bca")
    assert "the bootstrap's is the narrower for j5 (1 of 3 agents)" in text  # 0.750 < 0.935; j1, j2 wider


def test_nothing_is_said_where_every_bootstrap_interval_is_wider():
    wide = _wide([(3.0, 4.2), (2.0, 3.5), (2.5, 3.5)], [(3.1, 4.0), (2.2, 3.3), (2.6, 3.4)])
    assert _narrower_boot(wide, "bca") == ""


def test_an_undefined_interval_is_not_counted():
    wide = _wide([(3.0, 4.2), (2.0, 3.5), (2.625, 3.375)], [(3.1, 4.0), (2.2, 3.3), (2.558, 3.493)])
    wide = wide.astype(object)
    wide.loc["j5", ["bootstrap bca lower", "bootstrap bca upper"]] = "undefined"
    assert _narrower_boot(wide, "bca") == ""
