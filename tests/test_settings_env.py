"""Every environment variable the service reads is documented, and nothing documented is unread.

Found by reading the source, not by importing it:
- the settings (rewardhub/settings/*.py): ``env("NAME", ...)`` and ``env.<type>("NAME", ...)``;
- the apps, rewardhub/ and scripts/*.py: ``os.environ.get("NAME")``, ``os.environ["NAME"]``,
  ``"NAME" in os.environ`` and ``os.getenv("NAME")`` (``os.environ.setdefault`` writes a value
  for a library or for Django, it offers no knob, so it does not count);
- scripts/*.sh: ``${NAME:-default}``, ``${NAME:?message}`` and ``$NAME`` / ``${NAME}`` of a
  name the script does not assign itself.

Each must appear in .env.example (``NAME=`` or ``# NAME=`` at the start of a line) and in
README.md. Test-only variables (``RH_TEST_*``, and whatever only tests/ reads) are left out;
so are trainer_bridge/ and bench/, which run outside the service and document their own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
ENV_EXAMPLE = ROOT / ".env.example"
README = ROOT / "README.md"
TEST_ONLY_PREFIXES = ("RH_TEST_",)
SHELL_NAMES = {"HOME", "PATH", "PWD", "OLDPWD", "UID", "USER", "SHELL", "IFS", "BASH_SOURCE"}


def _literal_first_arg(node: ast.Call) -> str | None:
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def settings_variables() -> dict[str, str]:
    """NAME -> the settings module reading it, from ``env(...)`` / ``env.<type>(...)`` calls."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "rewardhub" / "settings").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            is_env = (isinstance(func, ast.Name) and func.id == "env") or (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "env"
            )
            name = _literal_first_arg(node) if is_env else None
            if name:
                found.setdefault(name, f"rewardhub/settings/{path.name}")
    return found


def _python_reads(tree: ast.AST) -> set[str]:
    # A bare ``environ`` is the process environment only after ``from os import environ``
    # (in a WSGI callable it is the request's).
    bare = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "os"
        and any(alias.name == "environ" and alias.asname is None for alias in node.names)
        for node in ast.walk(tree)
    )

    def _is_environ(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "environ"
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (bare and isinstance(node, ast.Name) and node.id == "environ")

    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            get = isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value)
            getenv = (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Name) and func.id == "getenv"
            )
            if (get or getenv) and (name := _literal_first_arg(node)):
                names.add(name)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _is_environ(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            names.add(node.slice.value)
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_is_environ(c) for c in node.comparators)
        ):
            names.add(node.left.value)
    return names


def _first_party_packages() -> list[Path]:
    """The apps of INSTALLED_APPS that live in this repository (rewardhub/ among them)."""
    folders = []
    for app in settings.INSTALLED_APPS:
        folder = ROOT / app.split(".")[0]
        if folder.is_dir() and folder not in folders:
            folders.append(folder)
    return folders


def python_variables() -> dict[str, str]:
    found: dict[str, str] = {}
    files = [p for folder in _first_party_packages() for p in sorted(folder.rglob("*.py"))]
    files += sorted((ROOT / "scripts").glob("*.py"))
    for path in files:
        for name in _python_reads(ast.parse(path.read_text(), filename=str(path))):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


_EXPANSION_WITH_DEFAULT = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::?[-?=+])")
_PLAIN_EXPANSION = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Z][A-Z0-9_]*)=", re.M)


def shell_variables() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((ROOT / "scripts").glob("*.sh")):
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        assigned = set(_ASSIGNMENT.findall(text))
        names = set(_EXPANSION_WITH_DEFAULT.findall(text))
        names |= {n for n in _PLAIN_EXPANSION.findall(text) if n not in assigned}
        for name in names - SHELL_NAMES:
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def project_variables() -> dict[str, str]:
    """Every variable the service and its scripts read: NAME -> a file reading it."""
    found = {**shell_variables(), **python_variables(), **settings_variables()}
    return {n: f for n, f in sorted(found.items()) if not n.startswith(TEST_ONLY_PREFIXES)}


def _documented_in_env_example(name: str, text: str) -> bool:
    return re.search(rf"^(?:# )?{re.escape(name)}=", text, re.M) is not None


def _mentioned(name: str, text: str) -> bool:
    return re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", text) is not None


def test_the_scan_finds_each_kind_of_read() -> None:
    """Guards the parsers: an empty or half-blind scan would pass the tests below vacuously."""
    found = project_variables()
    assert len(settings_variables()) > 60
    for name, where in {
        "DATABASE_URL": "rewardhub/settings/database.py",
        "RH_API_KEY_CACHE_SECONDS": "rewardhub/settings/caches.py",
        "DJANGO_SECURE_HSTS_SECONDS": "rewardhub/settings/production.py",
        "RH_DEMO_PASSWORD": "rewardhub/management/commands/seed_demo.py",
        "CAMPAIGN_DATABASE_URL": "scripts/schemathesis_campaign.py",
        "RH_BIND": "rewardhub/gunicorn_conf.py",
        "MALLOC_ARENA_MAX": "scripts/serve.sh",
    }.items():
        assert found.get(name) == where, (name, found.get(name))
    # Shell locals and test-only variables are not configuration.
    assert not {"PY", "BIND", "PGHOST", "DB_NAME", "SUDO", "RH_TEST_DB"} & set(found)


def test_python_reads_are_recognised() -> None:
    code = (
        "import os\nfrom os import environ, getenv\n"
        "os.environ.get('A'); os.environ['B']; 'C' in os.environ; os.getenv('D'); getenv('E')\n"
        "environ.get('F'); os.environ.setdefault('G', '1'); os.environ['H'] = '1'\n"
    )
    assert _python_reads(ast.parse(code)) == {"A", "B", "C", "D", "E", "F"}
    wsgi = "def app(environ, start_response):\n    return environ.get('PATH_INFO')\n"
    assert _python_reads(ast.parse(wsgi)) == set()


def test_every_variable_is_in_env_example() -> None:
    text = ENV_EXAMPLE.read_text()
    missing = {
        n: f for n, f in project_variables().items() if not _documented_in_env_example(n, text)
    }
    assert not missing, f"add to .env.example (NAME= or # NAME=): {missing}"


def test_every_variable_is_in_the_readme() -> None:
    text = README.read_text()
    missing = {n: f for n, f in project_variables().items() if not _mentioned(n, text)}
    assert not missing, f"document in README.md: {missing}"


def test_env_example_lists_only_variables_that_are_read() -> None:
    """A variable documented but read by nothing is a knob that does nothing."""
    listed = re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.M)
    unread = sorted(set(listed) - set(project_variables()))
    assert not unread, f"in .env.example but read by nothing: {unread}"


# --- The README's "Settings" table and .env.example agree with the code -------------------------
# Issue #22 found limits that only the code knew. Each variable read by a settings module is on
# that module's row of the README table (or, for ``RH_CACHE_*``, on its row of the "Caches"
# table) and in the .env.example group naming the module; where its default is a plain number
# or a boolean, both show that value.

_UNITS = {"MB": 1_000_000, "KiB": 1024}


def settings_defaults() -> dict[str, tuple[str, object]]:
    """NAME -> (settings module file name, its default when a literal, else None).

    production.py reads a few names again to require them: they belong to the module that
    reads them first, so it is read last."""
    found: dict[str, tuple[str, object]] = {}
    paths = (ROOT / "rewardhub" / "settings").glob("*.py")
    for path in sorted(paths, key=lambda p: (p.name == "production.py", p.name)):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)):
                continue
            func = node.func
            owner = func if isinstance(func, ast.Name) else func.value
            if not (isinstance(owner, ast.Name) and owner.id == "env"):
                continue
            if (name := _literal_first_arg(node)) is None:
                continue
            default: object = None
            for keyword in node.keywords:
                if keyword.arg == "default":
                    try:
                        default = ast.literal_eval(keyword.value)
                    except ValueError:  # an expression (another setting): not checked here
                        default = None
            found.setdefault(name, (path.name, default))
    return found


def _readme_settings_rows() -> dict[str, str]:
    return {
        m.group(1): line
        for line in README.read_text().splitlines()
        if (m := re.match(r"\| `(\w+\.py)` \|", line))
    }


def _readme_cache_row(name: str) -> str | None:
    rows = [line for line in README.read_text().splitlines() if f"| `{name}` |" in line]
    return rows[0] if len(rows) == 1 else None


def _env_example_groups() -> dict[str, str]:
    """NAME -> the heading of the .env.example group it is listed under."""
    groups: dict[str, str] = {}
    heading = ""
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.startswith("# ---"):
            heading = line
        elif m := re.match(r"^(?:# )?([A-Z][A-Z0-9_]*)=", line):
            groups.setdefault(m.group(1), heading)
    return groups


def _env_example_values() -> dict[str, str]:
    return dict(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$", ENV_EXAMPLE.read_text(), re.M))


def _shown_number(text: str) -> float | None:
    """The number a README cell starts with: ``100,000``, ``2 s ...``, ``50 MB``, ``1,024``."""
    m = re.match(r"([0-9][0-9,]*(?:\.[0-9]+)?)(?:\s*(MB|KiB)\b)?", text)
    if m is None:
        return None
    return float(m.group(1).replace(",", "")) * _UNITS.get(m.group(2) or "", 1)


def _same(default: object, shown: str) -> bool:
    if isinstance(default, bool):
        return shown.split(";")[0].strip().lower() == str(default).lower()
    assert isinstance(default, int | float)
    number = _shown_number(shown)
    return number is not None and number == float(default)


def test_every_setting_is_on_its_modules_row_of_the_readme_table() -> None:
    rows = _readme_settings_rows()
    assert len(rows) >= 10, "the README's Settings table was not found"
    missing = {}
    for name, (module, _) in settings_defaults().items():
        row = rows.get(module, "")
        wildcards = re.findall(r"`([A-Z_]+)\*`", row)
        in_row = _mentioned(f"`{name}`", row) or any(name.startswith(w) for w in wildcards)
        if not in_row or (
            wildcards and name.startswith(tuple(wildcards)) and not _readme_cache_row(name)
        ):
            missing[name] = module
    assert not missing, f"add each to its module's row of README's Settings table: {missing}"


def test_every_setting_is_in_its_modules_group_of_env_example() -> None:
    groups = _env_example_groups()
    misplaced = {
        name: (module, groups.get(name, "")[:70])
        for name, (module, _) in settings_defaults().items()
        if module.removesuffix(".py") not in groups.get(name, "")
    }
    assert not misplaced, f"list each under the .env.example group naming its module: {misplaced}"


def test_numbers_and_switches_show_the_codes_default() -> None:
    rows, values = _readme_settings_rows(), _env_example_values()
    checked, wrong = 0, {}
    for name, (module, default) in settings_defaults().items():
        if not isinstance(default, int | float):  # bool is an int: switches are checked too
            continue
        checked += 1
        if not _same(default, values.get(name, "")):
            wrong[name] = (default, ".env.example", values.get(name))
        cache_row = _readme_cache_row(name)
        if cache_row is not None:
            shown = cache_row.split("|")[2].strip()
        elif m := re.search(rf"`{re.escape(name)}` \(([^)]*)\)", rows.get(module, "")):
            shown = m.group(1)
        else:
            shown = ""
        if not _same(default, shown):
            wrong[name] = (default, "README", shown)
    assert checked > 50, "the defaults were not found"
    assert not wrong, f"shown defaults that are not the code's: {wrong}"


def test_a_wrong_shown_default_is_caught() -> None:
    """Guards the comparison itself: a README or .env.example value off by a digit fails."""
    assert _same(400_000, "400,000 characters") and not _same(400_000, "40,000 characters")
    assert _same(50_000_000, "50 MB") and not _same(50_000_000, "5 MB")
    assert _same(65_536, "65536: 64 KiB") and _same(2.0, "2 s per command")
    assert _same(True, "true; false also turns off HSTS") and not _same(False, "true")
    assert not _same(5, "") and not _same(0.8, "none")
