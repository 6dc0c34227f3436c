"""Misuses mypy must catch (the control that shows tests/typing/usage.py is really checked).

Each line marked ``# expect: <code>`` must get exactly that mypy error and no other line
any; ``tests/test_typing.py`` compares them. Never run.
"""

from __future__ import annotations

from hierbench import freq
from hierbench.data import load_metr
from hierbench.io import load_fit
from hierbench.metrics import pass_hat_k


def misuse() -> None:
    """Wrong keyword, wrong literal, wrong result type, missing argument, wrong argument type."""
    ds = load_metr()
    freq.variance_components(ds, desing="run:task")  # expect: call-arg
    freq.pass_hat_k(ds, [1, 2], small_n="zero")  # expect: arg-type
    coefficient: str = freq.variance_components(ds).e_rho2  # expect: assignment
    freq.bootstrap_ci()  # expect: call-arg
    pass_hat_k(ds, k=2)  # expect: arg-type
    load_fit("fit.nc", engine="pickle")  # expect: arg-type
    assert coefficient
