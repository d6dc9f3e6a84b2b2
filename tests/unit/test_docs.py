"""The docs pages derived from the code are current, and what they say by hand agrees with it.

``docs/configuration.md`` is generated from ``ragspine.config.SETTINGS`` by
``scripts/gen_docs.py``; the capability pages' *Settings* tables are written by hand, so their
literal defaults are checked against the registry here. ``mkdocs build --strict`` (``scripts/docs``,
run by ``.ci/run``) checks the links and anchors.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from ragspine.config import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_page_is_generated_from_the_registry():
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert committed == gen_docs().configuration_page(DOCS), "docs/configuration.md is stale: run .venv/bin/python scripts/gen_docs.py"


def test_every_setting_is_on_the_configuration_page():
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [s.env for s in SETTINGS.values() if f"| `{s.env}` |" not in page]
    assert missing == []


def test_every_setting_is_explained_on_a_page():
    explained = gen_docs().explained_on(DOCS)
    assert [s.env for s in SETTINGS.values() if s.env not in explained] == []


def _same(documented: str, default: object) -> bool:
    if isinstance(default, bool):
        return documented == str(default).lower()
    if isinstance(default, (int, float)):
        return float(documented) == float(default)
    return documented == str(default)


def test_the_settings_tables_state_the_codes_defaults():
    by_env = {s.env: s for s in SETTINGS.values()}
    wrong = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        section = text.split("\n## Settings\n", 1)[1] if "\n## Settings\n" in text else ""
        for env, documented in re.findall(r"^\| `(RAGSPINE_\w+)` \| `([^`$]*)` \|", section, flags=re.MULTILINE):
            if not _same(documented, by_env[env].default):
                wrong.append(f"{page.relative_to(ROOT)}: {env} documented {documented!r}, the code's default is {by_env[env].default!r}")
    assert wrong == []


def test_each_benchmark_names_the_command_that_produced_it():
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    sections = page.split("\n## ")[1:]
    assert sections
    assert [s.splitlines()[0] for s in sections if "scripts/" not in s] == []


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_every_named_profile_needs_extras_that_exist():
    """A profile's extras come from its models' registry lines; each is a real extra of the package."""
    from ragspine.profile import PROFILES

    extras = set(gen_docs().extras())
    assert PROFILES["multilingual"].needs == ("multilingual",) and PROFILES["quality"].needs == ("embed-onnx",)
    for named in PROFILES.values():
        assert set(named.needs) <= extras, (named.name, named.needs)
