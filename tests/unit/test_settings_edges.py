"""The environment is read at the edges only (issue 26 item 3).

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
