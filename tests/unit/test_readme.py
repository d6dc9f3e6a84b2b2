"""The README's configuration table and first screen stay true to the code."""

from __future__ import annotations

from pathlib import Path

from ragspine.config import SETTINGS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented():
    missing = [s.env for s in SETTINGS.values() if f"`{s.env}`" not in README]
    assert missing == []


def test_first_screen_gives_the_two_commands_ci_uses():
    first_screen = "\n".join(README.splitlines()[:25])
    assert "./scripts/demo" in first_screen and "./scripts/test" in first_screen
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test" in ci
