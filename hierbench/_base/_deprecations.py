"""Deprecations: :func:`renamed_kwargs` (an old keyword) and :func:`moved_names` (an old importable name).

Each keeps the old spelling working for one release, with a ``DeprecationWarning`` at the
user's line.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import TypeVar

from ._warnings import OUTSIDE_PACKAGE

_F = TypeVar("_F", bound=Callable[..., Any])


def renamed_kwargs(**renames: str) -> Callable[[_F], _F]:
    """Keep old keyword names working for one release, with a DeprecationWarning.

    The one mechanism for a renamed argument: decorate the function (whose
    signature holds only the new names) with ``old="new"`` pairs. A call with
    an old keyword warns, naming the new one, and passes its value on under the
    new name; giving both is a TypeError. Positional calls are untouched.

    Parameters
    ----------
    **renames : str
        Old keyword -> new keyword.

    Returns
    -------
    callable
        A decorator; the decorated function keeps its name, docstring and
        signature (``inspect.signature`` shows the new names).

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs(dim="run_dim")
    ... def f(x, run_dim="run"):
    ...     return run_dim
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(1, dim="epoch"), str(w[0].message)
    ('epoch', '`dim` of f() is deprecated and will be removed in the next release; use `run_dim`')
    """

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got `{old}` (the deprecated name of `{new}`) "
                                    f"and `{new}`; give `{new}` only")  # fmt: skip
                warnings.warn(
                    f"`{old}` of {fn.__name__}() is deprecated and will be removed in the next "
                    f"release; use `{new}`",
                    DeprecationWarning,
                    stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
                )
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def moved_names(module: str, moved: Mapping[str, tuple[str, str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` under which old names still import, with a DeprecationWarning.

    The one mechanism for a public name that moved or was renamed: the module
    assigns ``__getattr__ = moved_names(__name__, {old: (new_module, new_name,
    why)})`` and keeps the old names in its ``__all__`` for one release.

    Parameters
    ----------
    module : str
        The module the old names are imported from (its ``__name__``).
    moved : mapping
        Old name -> (the module that owns it now, its name there, why it moved).

    Returns
    -------
    callable
        The module-level ``__getattr__``: it warns and returns the new object
        for an old name, and raises AttributeError for any other name.

    Examples
    --------
    >>> import warnings
    >>> get = moved_names("mymod", {"old_sqrt": ("math", "sqrt", "a clearer name")})
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     get("old_sqrt")(4.0), str(w[0].message)  # doctest: +ELLIPSIS
    (2.0, 'mymod.old_sqrt moved to math.sqrt (a clearer name); the old name will be removed in the next release')
    """

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, new, why = moved[name]
        warnings.warn(
            f"{module}.{name} moved to {where}.{new} ({why}); the old name will be removed in the next release",
            DeprecationWarning,
            stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
        )
        return getattr(importlib.import_module(where), new)

    return __getattr__
