"""The README's first screen stays true to CI, and it stays short: the rest lives in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_first_screen_gives_the_two_commands_ci_uses():
    first_screen = "\n".join(README.splitlines()[:25])
    assert "./scripts/demo" in first_screen and "./scripts/test" in first_screen
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test" in ci


def test_the_readme_is_a_front_page():
    assert len(README.splitlines()) <= 200, "move the detail to a page under docs/"


def test_the_readme_links_resolve():
    """The README is not part of the site, so mkdocs --strict does not check its links."""
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target
