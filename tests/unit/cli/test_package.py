"""The CLI package's shape: the entry point, ``python -m ragspine.cli``, one settings loader,
and which modules may import :mod:`ragspine.stack` (domain packages never do)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import ragspine

PACKAGE = Path(ragspine.__file__).parent
ROOT = PACKAGE.parent

#: Who may import ragspine.stack: the command line, the HTTP service, and the stack itself.
ALLOWED = ("ragspine/cli/", "ragspine/service/", "ragspine/stack.py")
#: Modules outside ALLOWED that still import it, each with the reason it cannot be fixed yet.
EXCEPTIONS: dict[str, str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module an import statement of ``source`` (module ``module``) names — at module
    level, in functions and under ``TYPE_CHECKING`` alike — relative imports resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from ragspine import stack`
    return names


def _importers(module: str) -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        names = _imported(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")
        if any(name == module or name.startswith(module + ".") for name in names):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_cli_and_the_service_import_the_stack() -> None:
    importers = _importers("ragspine.stack")
    assert {"ragspine/cli/common.py", "ragspine/service/context.py"} <= importers  # the check sees imports
    outside = {path for path in importers if not path.startswith(ALLOWED)}
    assert outside == set(EXCEPTIONS), f"modules outside {ALLOWED} import ragspine.stack: {sorted(outside - set(EXCEPTIONS))}"


@pytest.mark.parametrize("source", [
    "from ragspine.stack import Stack",
    "import ragspine.stack",
    "from ragspine import stack",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..stack import Stack",
    "def f():\n    from .. import stack",
])
def test_the_check_sees_every_form_of_import(source) -> None:
    assert "ragspine.stack" in _imported(source, "ragspine.agent.factory")


def test_no_cli_module_loads_settings_but_settings_from_args() -> None:
    users = set()
    for path in (PACKAGE / "cli").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Name) and n.id == "load_settings" or isinstance(n, ast.Attribute) and n.attr == "load_settings"
               for n in ast.walk(tree)):
            users.add(path.name)
    assert users == {"common.py"}


def test_the_entry_point_and_python_dash_m() -> None:
    import pkgutil

    from ragspine.cli.app import main

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'ragspine = "ragspine.cli:main"' in pyproject
    assert pkgutil.resolve_name("ragspine.cli:main") is main
    proc = subprocess.run([sys.executable, "-m", "ragspine.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("ragspine "), proc.stderr


def test_the_stack_stays_a_facade() -> None:
    """``stack.py`` holds the pipeline cache and the recipe lookups; wiring lives in ``assembly/``
    (issue 26: under 250 lines, and it decides nothing by a backend's name)."""
    source = (PACKAGE / "stack.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) < 250
    by_name = [ast.unparse(node) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Compare)
               and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops)
               and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in (node.left, *node.comparators))]
    assert by_name == []  # no `x == "llm"`: registry lines declare what a backend needs
