"""The analyzer's modules form a one-way chain (safety/analyzer/README.md, "Modules").

Each module imports only modules to its left, never the package itself (its ``__init__`` is
the public facade over all of them), never a private name of another module, and nothing of the
project outside the analyzer (no Django). Imports are read with ``ast`` from the source, so an
import inside a function or under ``TYPE_CHECKING`` counts as much as one at the top.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "safety.analyzer"
PACKAGE_DIR = ROOT / "safety" / "analyzer"

# Left to right; a module may import modules of earlier layers only.
CHAIN: list[tuple[str, ...]] = [
    ("config", "lru", "deadline"),
    ("ir",),
    ("frontends", "frontends.bashlex_fe", "frontends.plain_fe", "frontends.treesitter_fe"),
    ("vocabulary",),
    ("policy",),
    ("resolve",),
    ("effects",),
    ("rules",),
    ("engine",),
    ("examples",),
]
LAYER = {f"{PACKAGE}.{name}": i for i, names in enumerate(CHAIN) for name in names}
# Top-level packages of this project (and Django): the pure core imports none of them.
PROJECT_PACKAGES = {p.parent.name for p in ROOT.glob("*/__init__.py")} | {"django"}


@dataclass(frozen=True)
class Source:
    """One module's text and where it sits (a package's ``__init__`` resolves ``.`` to itself)."""

    module: str
    text: str
    is_package: bool = False

    @classmethod
    def of(cls, path: Path) -> Source:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        return cls(".".join(parts), path.read_text("utf-8"), is_package)

    def absolute(self, level: int, module: str | None) -> str:
        """The dotted name ``from <level dots><module> import ...`` refers to."""
        if not level:
            return module or ""
        parts = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
        parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # the module imported from (an analyzer module, or any other dotted name)
    name: str | None  # the name taken from it (``from m import name``), None for a module
    bound_as: str | None = None  # the local name an analyzer module is bound to


def is_analyzer_module(name: str) -> bool:
    return name == PACKAGE or name in LAYER


def imports_in(source: Source) -> list[Import]:
    """Every import, relative ones made absolute; ``from pkg import x`` where ``pkg.x`` is an
    analyzer module counts as importing the module ``pkg.x``."""
    out: list[Import] = []
    for node in ast.walk(ast.parse(source.text, source.module)):
        if isinstance(node, ast.Import):
            out.extend(Import(node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = source.absolute(node.level, node.module)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if is_analyzer_module(submodule):
                    out.append(Import(node.lineno, submodule, None, alias.asname or alias.name))
                else:
                    out.append(Import(node.lineno, base, alias.name))
    return out


def layer_violations(source: Source) -> list[str]:
    if source.module == PACKAGE:
        return []  # the facade re-exports from every layer
    wrong = []
    for imp in imports_in(source):
        if imp.module == PACKAGE:
            wrong.append(f"line {imp.line}: imports the package facade {PACKAGE}")
        elif imp.module in LAYER and LAYER[imp.module] >= LAYER[source.module]:
            wrong.append(f"line {imp.line}: imports {imp.module}, not left of {source.module}")
    return wrong


def private_name_violations(source: Source) -> list[str]:
    """``from other import _name`` and ``other._name`` for another analyzer module ``other``."""
    imports = imports_in(source)
    wrong = [
        f"line {imp.line}: from {imp.module} import {imp.name}"
        for imp in imports
        if imp.name is not None
        and imp.name.startswith("_")
        and is_analyzer_module(imp.module)
        and imp.module != source.module
    ]
    bound = {imp.bound_as: imp.module for imp in imports if imp.bound_as is not None}
    for node in ast.walk(ast.parse(source.text, source.module)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            wrong.append(f"line {node.lineno}: {bound[node.value.id]}.{node.attr}")
    return wrong


def project_import_violations(source: Source) -> list[str]:
    return [
        f"line {imp.line}: {imp.module}"
        for imp in imports_in(source)
        if imp.module.split(".")[0] in PROJECT_PACKAGES and not is_analyzer_module(imp.module)
    ]


SOURCES = [Source.of(path) for path in sorted(PACKAGE_DIR.rglob("*.py"))]


def _id(source: Source) -> str:
    return source.module


def test_every_analyzer_module_has_a_place_in_the_chain() -> None:
    modules = {s.module for s in SOURCES} - {PACKAGE}
    assert modules == set(LAYER), "place new modules in CHAIN (and in the README)"


@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_modules_import_only_to_their_left(source: Source) -> None:
    assert layer_violations(source) == []


@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_no_private_names_cross_modules(source: Source) -> None:
    assert private_name_violations(source) == []


@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_the_core_imports_nothing_of_the_project_outside_itself(source: Source) -> None:
    assert project_import_violations(source) == []


def test_importing_the_analyzer_loads_no_django() -> None:
    code = (
        "import sys, safety.analyzer\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rewardhub')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_checks_see_what_they_must_refuse() -> None:
    """Imports to the right (at the top and inside a function), of the facade and of private
    names, in a made-up ``policy.py``, are each reported."""
    source = Source(
        f"{PACKAGE}.policy",
        "from . import engine as eng\n"
        "from .vocabulary import ACTIONS\n"
        "import django.conf\n"
        "def f():\n"
        "    from .rules import RuleMatcher\n"
        "    from safety.analyzer import Analyzer\n"
        "    from .vocabulary import _hidden\n"
        "    return eng._private\n",
    )
    assert layer_violations(source) == [
        f"line 1: imports {PACKAGE}.engine, not left of {PACKAGE}.policy",
        f"line 5: imports {PACKAGE}.rules, not left of {PACKAGE}.policy",
        f"line 6: imports the package facade {PACKAGE}",
    ]
    assert private_name_violations(source) == [
        f"line 7: from {PACKAGE}.vocabulary import _hidden",
        f"line 8: {PACKAGE}.engine._private",
    ]
    assert project_import_violations(source) == ["line 3: django.conf"]
    frontend = Source(f"{PACKAGE}.frontends.plain_fe", "from ..ir import Word\nfrom .. import ir\n")
    assert [i.module for i in imports_in(frontend)] == [f"{PACKAGE}.ir", f"{PACKAGE}.ir"]
    assert layer_violations(frontend) == []
