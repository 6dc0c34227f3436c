"""Progress output: :func:`watched` (the one rule for whether anyone watches) and :class:`Progress`."""

from __future__ import annotations

from typing import Any


def watched(stream: Any = None) -> bool:
    """Whether someone watches this process: ``stream`` (default stderr) is a terminal, or a Jupyter kernel runs it.

    The one rule for progress output (bars, stage lines, the sampler's own
    bar). A kernel is detected from a running ``ZMQInteractiveShell``, never
    from ``ipykernel`` merely being imported (any library may import it), and
    IPython is never imported here. ``HIERBENCH_PROGRESS=0`` in the
    environment says nobody watches (batch jobs; notebooks executed for
    publication, whose saved outputs should hold results, not progress bars).

    Examples
    --------
    >>> import io
    >>> watched(io.StringIO())
    False
    """
    import os
    import sys

    if os.environ.get("HIERBENCH_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False

    ip = sys.modules.get("IPython")
    if ip is not None:
        try:
            shell = ip.get_ipython()
        except Exception:  # pragma: no cover - a broken IPython install
            shell = None
        if shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell":
            return True
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def _bar_class(stream: Any):
    """Tqdm's notebook widget in a Jupyter kernel with ipywidgets, else its text bar.

    What ``tqdm.auto`` picks, minus its warning when ipywidgets is missing (the
    text bar is used then). A bar given an explicit ``stream`` is always text.
    """
    import importlib.util

    from tqdm import std

    if stream is None and watched() and importlib.util.find_spec("ipywidgets") is not None:
        import sys

        ip = sys.modules.get("IPython")
        shell = ip.get_ipython() if ip is not None else None
        if shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell":
            from tqdm import auto

            return auto.tqdm
    return std.tqdm


class Progress:
    """A progress bar for long loops: tqdm's widget in a notebook, its text bar in a terminal.

    ``enabled=None`` (the default everywhere) shows it only when a person is
    watching: standard error is a terminal, or the code runs in a Jupyter
    kernel. Nothing is drawn until ``delay`` seconds have passed, so quick
    work stays silent; ``enabled=False`` never draws, ``True`` always does.
    ``total=None`` is a bar without an end (elapsed time and a count);
    :meth:`stage` names the step under way beside the bar.

    Examples
    --------
    >>> with Progress(3, "resamples", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    >>> bar.done
    3
    """

    def __init__(
        self,
        total: int | None,
        desc: str,
        *,
        enabled: bool | None = None,
        delay: float = 0.5,
        stream: Any = None,
        unit: str = "it",
    ):
        self.total = None if total is None else max(int(total), 1)
        self.desc = desc
        self.done = 0
        if enabled is None:
            enabled = watched(stream)
        self.enabled = bool(enabled)
        self._bar = None
        import time

        self._shown_after = time.monotonic() + float(delay)
        if self.enabled:
            import shutil
            import sys

            cls = _bar_class(stream)
            # a terminal reporting no size (some pseudo-terminals) would hide the bar
            size = shutil.get_terminal_size((100, 20))
            self._bar = cls(
                total=self.total,
                desc=desc,
                delay=float(delay),
                file=stream if stream is not None else sys.stderr,
                unit=unit,
                leave=True,
                ncols=size.columns,
                nrows=size.lines,
            )

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` steps (redrawn when visible)."""
        self.done += int(n)
        if self._bar is not None:
            self._bar.update(int(n))

    def stage(self, text: str) -> None:
        """Name the step under way (shown after the bar; nothing when not visible)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)
            self.refresh()

    def refresh(self) -> None:
        """Redraw once ``delay`` has passed (the elapsed time moves on without a step done)."""
        import time

        if self._bar is not None and time.monotonic() >= self._shown_after:
            self._bar.refresh()

    def close(self) -> None:
        """Finish the bar (a text bar ends its line; nothing was drawn if it never showed)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
