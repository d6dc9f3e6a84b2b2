"""The environment is read at the edges only, and the settings import nothing they configure (issue 26 item 3).

``load_settings()`` turns the ``RAGSPINE_*`` variables into a :class:`~ragspine.config.Settings`;
only the edges call it — the CLI (``ragspine/cli/``), the service (``ragspine/service/``), the
:class:`~ragspine.stack.Stack` facade (``ragspine/stack.py``) and ``ragspine/config.py`` itself.
Everything below them (the role factories ``make_<role>(spec)``, the model backends, the
assembly) is handed the settings, or the values it needs, by its caller.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ragspine

PACKAGE = Path(ragspine.__file__).resolve().parent

#: Where ``load_settings`` may be called (paths relative to ``ragspine/``; a trailing ``/``: a folder).
EDGES = ("cli/", "service/", "stack.py", "config.py")

#: Calls below the edges that stay, each with its reason (module path -> why).
EXCEPTIONS: dict[str, str] = {
    # make_chunk_store / make_vector_store / make_embedding_cache(settings=None) fall back to
    # load_settings({}): the seed's defaults from an empty mapping, no RAGSPINE_* variable read.
    # Every ragspine caller passes its Settings; ragspine/stores/ was outside this change.
    "stores/registry.py": "load_settings({}) (the seed's defaults, not the environment) when a store factory is given no settings",
}


def _is_edge(relative: str) -> bool:
    return any(relative.startswith(edge) if edge.endswith("/") else relative == edge for edge in EDGES)


def _calls(tree: ast.AST) -> list[int]:
    """Line numbers of calls to ``load_settings`` (a bare name or an attribute, e.g. ``config.load_settings()``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name == "load_settings":
                lines.append(node.lineno)
    return lines


def test_only_the_edges_call_load_settings():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if _is_edge(relative) or relative in EXCEPTIONS:
            continue
        for line in _calls(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            offenders.append(f"ragspine/{relative}:{line}")
    assert not offenders, "load_settings() below the CLI/service/Stack edges (pass the caller's Settings instead):\n" + "\n".join(offenders)


def test_the_exceptions_are_real():
    """An exception that no longer calls ``load_settings`` is removed from the list."""
    for relative, why in EXCEPTIONS.items():
        assert why, relative
        path = PACKAGE / relative
        assert path.is_file(), relative
        assert _calls(ast.parse(path.read_text(encoding="utf-8"))), f"ragspine/{relative} no longer calls load_settings"


def test_the_walk_sees_a_call():
    """The check itself finds both spellings of a call."""
    tree = ast.parse("from ragspine.config import load_settings\nimport ragspine.config as c\nload_settings()\nc.load_settings({})\n")
    assert _calls(tree) == [3, 4]


# -- config.py imports nothing of what it configures -----------------------------------------------
#: Packages ``ragspine/config.py`` never imports (at the top or inside a function): they import
#: the settings, never the other way round (a value only they can check is named by a
#: ``Setting.check`` import string instead, and the bounds come from the leaf ``ragspine.limits``).
CONFIGURED = ("ragspine.retrieval", "ragspine.llm")


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``import``/``from ... import`` in ``tree``, nested ones included
    (``from ragspine.retrieval import ranking`` gives ``ragspine.retrieval.ranking`` too)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def _configured(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in CONFIGURED)


def test_config_imports_nothing_of_retrieval_or_llm():
    path = PACKAGE / "config.py"
    imported = _imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    assert imported, "the walk found no import at all"
    assert not [module for _, module in imported if module.startswith(".")], "config.py uses a relative import: check it by hand"
    offenders = [f"ragspine/config.py:{line}: {module}" for line, module in imported if _configured(module)]
    assert not offenders, "config.py imports what it configures (name a checker by its import string instead):\n" + "\n".join(offenders)


def test_the_import_walk_sees_nested_and_from_imports():
    tree = ast.parse("import os\ndef f():\n    from ragspine.llm.spec import check_llm\nfrom ragspine import retrieval\n")
    assert sorted(m for _, m in _imported(tree) if _configured(m)) == ["ragspine.llm.spec", "ragspine.llm.spec.check_llm", "ragspine.retrieval"]


def test_each_named_checker_imports_and_keeps_its_message():
    """A ``Setting.check`` names a function that exists; the values it checks fail as before."""
    import importlib

    import pytest

    from ragspine.config import SETTINGS, load_settings
    from ragspine.errors import ConfigError

    checked = {name: setting.check for name, setting in SETTINGS.items() if setting.check}
    assert set(checked) == {"contextual", "llm", "fusion_weights", "profile_options", "ocr_langs"}
    for target in checked.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), target
    s = load_settings({"RAGSPINE_CONTEXTUAL": "ON", "RAGSPINE_LLM": " OpenAI ", "RAGSPINE_FUSION_WEIGHTS": "vector=0.50,bm25=1"})
    assert (s.contextual, s.llm.provider, s.ranking.fusion_weights) == ("header", "openai", "vector=0.5,bm25=1")
    for env, value, message in (("RAGSPINE_CONTEXTUAL", "maybe", "unknown RAGSPINE_CONTEXTUAL 'maybe'"),
                                ("RAGSPINE_LLM", "gpt", "unknown LLM provider 'gpt'"),
                                ("RAGSPINE_FUSION_WEIGHTS", "dense=1", "RAGSPINE_FUSION_WEIGHTS: unknown leg 'dense'"),
                                ("RAGSPINE_RERANK_DEPTH", "201", "RAGSPINE_RERANK_DEPTH=201: must be at most 200"),
                                ("RAGSPINE_RAPTOR_LEVELS", "6", "RAGSPINE_RAPTOR_LEVELS=6: must be within 1..5"),
                                ("RAGSPINE_PROFILE_OPTIONS", "nope=1", "unknown profile option 'nope'; registered: none"),
                                ("RAGSPINE_OCR_LANGS", "eng;rm", "RAGSPINE_OCR_LANGS=.eng;rm.: language codes")):
        with pytest.raises(ConfigError, match=message):
            load_settings({env: value})


def test_importing_the_settings_loads_nothing_they_configure():
    """Nor indirectly: ``import ragspine.config`` (in a fresh interpreter) loads no module of ``retrieval/`` or ``llm/``."""
    import subprocess
    import sys

    code = ("import sys, ragspine.config; "
            f"print(sorted(m for m in sys.modules if m.startswith({CONFIGURED!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]", out.stdout
