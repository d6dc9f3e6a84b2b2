"""Progress of long work (ingest, embedding) that is honest on a terminal and off it.

:func:`progress` gives a tqdm bar when stderr is a terminal; otherwise (a log file, a CI
job, ``2>ingest.log``) a :class:`LineProgress` that prints one line every ``every`` seconds
— counts, rate and ETA — and a last line when the work ends, so a redirected run is never
silent for minutes. The total is only what is left to do: a caller that finds part of the
work already done (cached vectors) sets ``total`` to the rest before counting, so the rate
and the ETA are those of the real work. The rate a line shows, and the ETA from it, are those of
the last ``window`` seconds (default a minute), not of the whole run: a machine that slows down
under load (or speeds up once a model is warm) shows it within a minute. The last line shows
the whole run's average rate; :func:`peak_rss_mb` is the process's peak memory, which
``ragspine ingest`` and ``ragspine embed`` print when they end.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import IO, Any, Protocol

REPORT_EVERY_S = 10.0
RATE_WINDOW_S = 60.0


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
                 clock: Any = time.monotonic, leave: bool = True, window: float = RATE_WINDOW_S) -> None:
        self.desc, self.unit, self.total, self.stream, self.every, self.leave = desc, unit, total, stream, every, leave
        self.window = window
        self._printed = False
        self._printed_line: str | None = None
        self.n = 0.0
        self._clock = clock
        self._start = self._last = clock()
        self._samples: deque[tuple[float, float]] = deque([(self._start, 0.0)])  # (time, n), about one a second, the last window's
        self._postfix = ""
        self._closed = False

    def update(self, n: float = 1) -> None:
        self.n += n
        now = self._clock()
        if now - self._samples[-1][0] >= 1.0:
            self._samples.append((now, self.n))
            while len(self._samples) > 2 and now - self._samples[1][0] >= self.window:
                self._samples.popleft()  # keep one sample at or beyond the window's start
        if now - self._last >= self.every:
            self._last = now
            self._print(now)

    def set_postfix(self, *args: Any, refresh: bool = True, **kwargs: Any) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in kwargs.items())

    def rate(self, now: float) -> float:
        """Units per second over the last ``window`` seconds (the whole run while it is shorter)."""
        since, n0 = self._samples[0]
        for t, n in self._samples:  # the oldest sample inside the window
            if now - t <= self.window:
                since, n0 = t, n
                break
        if since == now:
            since, n0 = self._samples[0]
        return (self.n - n0) / max(now - since, 1e-9)

    def line(self, now: float | None = None, *, final: bool = False) -> str:
        now = self._clock() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.n / elapsed if final else self.rate(now)
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
        self._printed_line = self.line(now)
        print(self._printed_line, file=self.stream, flush=True)
        self._printed = True

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            last = self.line(self._clock(), final=True)
            if (self.leave or self._printed) and last != self._printed_line:  # not the last line again
                print(last, file=self.stream, flush=True)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            self._closed = True  # the error is the last word
        self.close()


def peak_rss_mb() -> float | None:
    """The process's peak resident memory in MB (``None`` where the platform does not say):
    Linux's ``VmHWM`` (this program's own: ``ru_maxrss`` keeps the high-water mark of the process
    it was forked from), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


def _clock_time(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
