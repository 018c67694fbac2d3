"""What a running review tells its user while it works: the stage, and in the long ones (selftests,
boot) what runs now and how many runs are left.

The stages call a Progress (a typed protocol, QUIET by default: library code and tests print
nothing): `stage(name)` around each stage, `expect(n)` when they know of N more runs (builds,
test runs, benchmark runs, boots), `advance(what)` as each one starts. The command line passes a
Display, on stderr and only when stderr is a terminal (cli/review.py): stdout (the report, the
JSON) never changes. rich is imported by the Display alone: a review without one does not pay
for it at start-up.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

SPINNER_AFTER = 1.0  # seconds: a stage quicker than this shows nothing


class Progress(Protocol):
    def stage(self, name: str) -> AbstractContextManager[None]:
        """Around one stage of the pipeline."""
        ...

    def expect(self, runs: int) -> None:
        """RUNS more runs (builds, tests, benchmark runs, boots) will follow in this stage."""
        ...

    def advance(self, what: str) -> None:
        """WHAT starts now (the run before it, if any, is done)."""
        ...


class Quiet:
    """Shows nothing: the default."""

    def stage(self, _name: str) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def expect(self, runs: int) -> None:
        pass

    def advance(self, what: str) -> None:
        pass


QUIET: Progress = Quiet()


class Display:
    """rich's progress on CONSOLE: a spinner for a stage that takes more than a second, and once
    the stage expects runs, the one running now, how many are done of how many, and its time."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._live: RichProgress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20),
                                            TimeElapsedColumn(), console=console, transient=True)
        self._lock = threading.Lock()  # the spinner's timer thread starts the display
        self._started = False
        self._task: TaskID | None = None
        self._stage = ""
        self._total = self._done = 0
        self._now = ""

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self._stage, self._total, self._done, self._now = name, 0, 0, ""
        self._task = self._live.add_task(f"{name}...", total=None)
        timer = threading.Timer(SPINNER_AFTER, self._start)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            with self._lock:
                if self._started:
                    self._live.stop()
                    self._started = False
            self._live.remove_task(self._task)
            self._task = None

    def expect(self, runs: int) -> None:
        self._total += runs
        self._show()

    def advance(self, what: str) -> None:
        if self._now:
            self._done += 1
        self._now = what
        self._total = max(self._total, self._done + 1)
        self._show()

    def _start(self) -> None:
        with self._lock:
            if not self._started and self._task is not None:
                self._live.start()
                self._started = True

    def _show(self) -> None:
        if self._task is None:  # outside a stage: nothing to show it in
            return
        self._start()  # runs are what take long: no need to wait for the spinner's second
        running = f": {self._now}" if self._now else ""
        left = self._total - self._done - (1 if self._now else 0)
        count = f" [{self._done + (1 if self._now else 0)}/{self._total}, {left} left]" if self._total else ""
        # The count before what runs: a narrow terminal cuts the end of the line.
        self._live.update(self._task, description=f"{self._stage}{count}{running}", total=self._total or None,
                          completed=self._done, refresh=True)
