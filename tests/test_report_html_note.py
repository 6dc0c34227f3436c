r"""HTML section notes render inline code as the lead and the captions do (audit C12).

The Convergence note read "(at \\`ability_theta\\`; ..." with raw backticks in the HTML while the
banner above rendered the same name as code.
"""

from __future__ import annotations

import pandas as pd

from hierbench.report import Report


def test_a_section_note_renders_code_and_escapes_the_rest():
    rep = Report("t")
    rep.section("Convergence", "text", note="R-hat 1.061 > 1.050 (at `ability_theta`; <b> is not markup)", id="conv")
    rep.section("Table", "text", table=pd.DataFrame({"x": [1.0]}),
                more=("the full `pair` table", pd.DataFrame({"y": [2.0]})), id="tab")
    html = rep.to_html()
    note = html.split('<p class="note">')[1].split("</p>")[0]
    assert note == "R-hat 1.061 &gt; 1.050 (at <code>ability_theta</code>; &lt;b&gt; is not markup)"
    assert "<summary>the full <code>pair</code> table</summary>" in html
