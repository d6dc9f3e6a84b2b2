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


def test_the_rate_and_eta_are_the_last_minutes_not_the_whole_runs() -> None:
    """A run that slows down (a busy machine) shows the slower rate within a minute, and an ETA
    from it; the last line gives the whole run's average."""
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(desc="embed", unit="chunk", total=20_000, stream=out, every=10.0, clock=clock)
    for _ in range(120):  # two minutes at 100 chunks/s
        clock.now += 1.0
        bar.update(100)
    assert "100.0 chunk/s" in out.getvalue().splitlines()[-1]
    for _ in range(90):  # then 10 chunks/s
        clock.now += 1.0
        bar.update(10)
    last = out.getvalue().splitlines()[-1]
    assert "10.0 chunk/s" in last  # the first minutes' 100/s no longer count
    assert "ETA 11:50" in last  # 7,100 left at 10/s (the whole run's 61/s would say 1:56)
    bar.close()
    assert "61.4 chunk/s" in out.getvalue().splitlines()[-1]  # 12,900 in 210 s: the whole run's average


def test_peak_memory_is_known_here() -> None:
    from ragspine.progress import peak_rss_mb

    peak = peak_rss_mb()
    assert peak is not None and 10 < peak < 100_000


def test_ingest_and_embed_end_with_their_peak_memory(tmp_path, capsys, monkeypatch) -> None:
    from ragspine.cli import main

    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", str(tmp_path / "m.db"))
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    (tmp_path / "a.txt").write_text("The gearbox warranty is 36 months.\n\nRepairs take five days.\n", encoding="utf-8")
    assert main(["ingest", str(tmp_path / "a.txt"), "--library", "kb", "--no-embed"]) == 0
    assert "peak memory: " in capsys.readouterr().err
    assert main(["embed", "--library", "kb"]) == 0
    out, err = capsys.readouterr()
    assert "kb: embedded" in out and err.splitlines()[-1].startswith("peak memory: ") and err.rstrip().endswith(" MB")
