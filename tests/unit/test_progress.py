"""LineProgress: a line every few seconds off a terminal, with counts, rate and an ETA of what is left."""

from __future__ import annotations

import io

from ragspine.progress import LineProgress, progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_period_with_rate_and_eta_then_a_last_line() -> None:
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(desc="embed", unit="chunk", total=1000, stream=out, every=10.0, clock=clock)
    for _ in range(9):
        clock.now += 1.0
        bar.update(10)
    assert out.getvalue() == ""  # under 10 s: nothing yet
    clock.now += 1.0
    bar.update(10)  # 10 s, 100 chunks
    assert out.getvalue().splitlines() == ["embed: 100/1,000 chunk, 10%, 10.0 chunk/s, ETA 1:30, elapsed 0:10"]
    clock.now += 5.0
    bar.update(400)
    bar.set_postfix(chunks=42)
    bar.close()
    bar.close()  # once only
    last = out.getvalue().splitlines()
    assert len(last) == 2 and last[1] == "embed: 500/1,000 chunk, 50%, 33.3 chunk/s, ETA 0:15, elapsed 0:15, chunks=42"


def test_the_total_can_be_set_once_the_work_left_is_known() -> None:
    out, clock = io.StringIO(), Clock()
    with LineProgress(desc="embed", unit="chunk", total=None, stream=out, clock=clock) as bar:
        bar.total = 0  # everything was cached
    assert out.getvalue().splitlines() == ["embed: 0 chunk, 0.0 chunk/s, elapsed 0:00"]


def test_a_terminal_gets_a_tqdm_bar_and_anything_else_lines() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert type(progress(desc="x", unit="doc", stream=Tty())).__name__ == "tqdm"
    assert isinstance(progress(desc="x", unit="doc", stream=io.StringIO()), LineProgress)


def test_no_closing_line_after_an_error_or_for_short_transient_work() -> None:
    out, clock = io.StringIO(), Clock()
    try:
        with LineProgress(desc="ingest", unit="doc", total=3, stream=out, clock=clock) as bar:
            bar.update(1)
            raise ValueError("bad file")
    except ValueError:
        pass
    with LineProgress(desc="check", unit="file", total=3, stream=out, clock=clock, leave=False) as bar:
        bar.update(3)
    assert out.getvalue() == ""
    with LineProgress(desc="check", unit="file", total=3, stream=out, clock=clock, leave=False, every=1.0) as bar:
        clock.now += 2.0
        bar.update(1)  # a long transient phase reported, so its end is too
        bar.update(2)
    assert [line.split(",")[0] for line in out.getvalue().splitlines()] == ["check: 1/3 file", "check: 3/3 file"]
    with LineProgress(desc="embed", unit="chunk", total=3, stream=out, clock=clock, every=1.0) as bar:
        clock.now += 2.0
        bar.update(3)  # its last periodic line already says 3/3: not printed twice
    assert len(out.getvalue().splitlines()) == 3
