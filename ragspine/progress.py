"""Progress of long work (ingest, embedding) that is honest on a terminal and off it.

:func:`progress` gives a tqdm bar when stderr is a terminal; otherwise (a log file, a CI
job, ``2>ingest.log``) a :class:`LineProgress` that prints one line every ``every`` seconds
— counts, rate and ETA — and a last line when the work ends, so a redirected run is never
silent for minutes. The total is only what is left to do: a caller that finds part of the
work already done (cached vectors) sets ``total`` to the rest before counting, so the rate
and the ETA are those of the real work.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Protocol

REPORT_EVERY_S = 10.0


class Progress(Protocol):
    total: float | None

    def update(self, n: float = 1) -> Any: ...

    def set_postfix(self, *args: Any, **kwargs: Any) -> Any: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...


def progress(*, desc: str, unit: str, total: float | None = None, stream: IO[str] | None = None,
             every: float = REPORT_EVERY_S, leave: bool = True) -> Progress:
    """A tqdm bar on a terminal, else a :class:`LineProgress` on ``stream`` (default stderr)."""
    stream = stream if stream is not None else sys.stderr
    if _is_terminal(stream):
        from tqdm import tqdm

        bar: Progress = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=leave)
        return bar
    return LineProgress(desc=desc, unit=unit, total=total, stream=stream, every=every, leave=leave)


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class LineProgress:
    """One line every ``every`` seconds while work goes on, and one when it ends (with
    ``leave``, or when a line was printed already) — not when it ends in an error, which
    speaks for itself."""

    def __init__(self, *, desc: str, unit: str, total: float | None, stream: IO[str], every: float = REPORT_EVERY_S,
                 clock: Any = time.monotonic, leave: bool = True) -> None:
        self.desc, self.unit, self.total, self.stream, self.every, self.leave = desc, unit, total, stream, every, leave
        self._printed = False
        self._printed_n: float | None = None
        self.n = 0.0
        self._clock = clock
        self._start = self._last = clock()
        self._postfix = ""
        self._closed = False

    def update(self, n: float = 1) -> None:
        self.n += n
        now = self._clock()
        if now - self._last >= self.every:
            self._last = now
            self._print(now)

    def set_postfix(self, *args: Any, refresh: bool = True, **kwargs: Any) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in kwargs.items())

    def line(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.n / elapsed
        done = f"{self.n:,.0f}" + (f"/{self.total:,.0f}" if self.total else "") + f" {self.unit}"
        parts = [done]
        if self.total:
            parts.append(f"{100.0 * self.n / self.total:.0f}%")
        parts.append(f"{rate:,.1f} {self.unit}/s")
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"ETA {_clock_time((self.total - self.n) / rate)}")
        parts.append(f"elapsed {_clock_time(elapsed)}")
        if self._postfix:
            parts.append(self._postfix)
        return f"{self.desc}: " + ", ".join(parts)

    def _print(self, now: float) -> None:
        print(self.line(now), file=self.stream, flush=True)
        self._printed = True
        self._printed_n = self.n

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if (self.leave or self._printed) and self._printed_n != self.n:  # not the last line again
                self._print(self._clock())

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            self._closed = True  # the error is the last word
        self.close()


def _clock_time(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
