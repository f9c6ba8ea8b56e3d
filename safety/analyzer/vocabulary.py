"""The closed vocabulary of the rule language: every word a policy may use, in one place.

A policy (``policy.py``) is validated against these sets, the rule matcher (``rules.py``) gives
each word its meaning, and the engine ranks findings by ``ACTION_RANK`` and ``SEVERITY_RANK``.
Adding a word here without giving it a meaning there is a bug: a predicate without a function
never holds. Severities and actions are defined here only: the safety models' choices and the
scorer's penalties and gates derive from them. The two glob dialects of the language are here
too, since rewards use them as well.
"""

from __future__ import annotations

import re

CATEGORIES = (
    "destructive-fs",
    "disk-device",
    "system-control",
    "fork-bomb",
    "remote-code-exec",
    "credential-access",
    "privilege-escalation",
    "persistence",
    "vcs-destruction",
    "test-tampering",
    "answer-leakage",
    "network",
    "analyzer",
)
SEVERITIES = ("info", "low", "medium", "high", "critical")
ACTIONS = ("allow", "review", "block")
ACTION_RANK = {a: i for i, a in enumerate(ACTIONS)}
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
# What the resolver and the engine report when they cannot see through a command (``signal``).
SIGNALS = (
    "unparseable",
    "parse-error",
    "misparse",
    "parser-disagreement",
    "dynamic-command-name",
    "eval-dynamic",
    "too-long",
    "too-deep",
    "too-complex",
    "hidden-characters",
    "nested-parse-error",
    "fork-bomb",
    "prompt-expansion",
    "dynamic-flags",
    "stops-at-syntax-error",
)
PREDICATES = {
    "outside-workspace": "an absolute path outside every workspace root, not strictly inside a "
    "temp root (a temp root itself counts as outside) and not in resolution.paths.scratch",
    "outside-scratch": "outside-workspace, but a temp root itself is fine (writing into /tmp)",
    "outside-workspace-file": "outside-workspace, excluding /, ~, well-known system directories "
    "and paths ending in / (what rm without -r cannot delete)",
    "workspace-root": "a workspace root itself, a glob directly in it, or an ancestor of it",
    "in-workspace": "a path inside a workspace root",
    "temp-path": "a path strictly inside a temp root",
    "test-path": "a workspace path matching the configured test path patterns",
    "test-config": "a test-runner config file (pytest.ini, tox.ini, conftest.py, ...)",
    "shared-config": "a config file that may hold a test-runner section (setup.cfg, pyproject)",
    "device": "a block/char device other than /dev/null, /dev/zero, /dev/*random, tty, std streams",
    "dev-null": "/dev/null",
    "dev-tcp": "bash's /dev/tcp or /dev/udp network pseudo-files to another machine",
    "credential-file": "a credential or secret file (resolution.paths.credential)",
    "persistence-file": "a shell rc, cron, systemd, authorized_keys, git hook ... file",
    "git-dir": "a .git directory or something inside it",
    "url": "a URL (scheme://...)",
    "upstream-patch-url": "a URL of an upstream patch, diff, commit or pull request",
    "vcs-url": "a VCS or archive URL an installer would fetch (git+https://, *.git, *.tar.gz URL)",
    "dynamic": "contains a value the analyzer cannot know",
    "glob": "contains glob characters",
    "remote-ref": "a git ref beyond the local history: origin/*, refs/remotes/*, FETCH_HEAD, @{u}",
    "commit-hash": "an explicit commit hash (cannot be checked to be an ancestor of HEAD)",
    "rev-path": "REV:path where REV is not HEAD-relative",
    "force-refspec": "a refspec starting with + (forced update)",
    "delete-refspec": "a refspec starting with : (deletes the remote ref)",
    "root": "the filesystem root /",
    "setuid-mode": "a chmod mode that sets setuid/setgid",
    "any": "anything",
}
MATCH_KEYS = frozenset(
    {
        "commands",
        "subcommand",
        "flags_any",
        "flags_all",
        "flags_none",
        "args_any",
        "arg_regex",
        "argv_regex",
        "option",
        "pipeline",
        "redirect",
        "writes",
        "assign_regex",
        "signal",
        "effect",
    }
)
WRITE_MODES = ("truncate", "append", "edit", "delete", "move-from", "move-to", "chmod")
REDIRECT_OPS = ("write", "append", "read", "any")


def glob_regex(pattern: str) -> str:
    """Path glob to regex: ``**`` spans directories, ``*`` and ``?`` do not; ``X/**`` matches X."""
    out = []
    i = 0
    p = pattern
    while i < len(p):
        if p.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif p.startswith("/**", i) and i + 3 == len(p):
            out.append("(?:/.*)?")
            i += 3
        elif p.startswith("**", i):
            out.append(".*")
            i += 2
        elif p[i] == "*":
            out.append("[^/]*")
            i += 1
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(p[i]))
            i += 1
    return "".join(out)


GLOB_CHARS = frozenset("*?[")


def globs_overlap(shell_glob: str, pattern: str) -> bool:
    """Could one path match both a shell glob an agent typed (``~/.net?c``, ``~/.ss*/id_rsa``)
    and a policy path pattern (``~/.ssh/id_*``, ``~/.gnupg/**``)? So a glob is judged by the
    files it may expand to. As the shell does, a wildcard does not match a leading dot; a
    bracket expression is taken as any one character; a wildcard name overlaps a pattern's
    wildcard name only when it names the pattern's literal part (``ls ~/*`` or ``~/x*`` is not
    reading ``~/**/*.pem``, ``cat ~/*.pem`` is)."""
    a, b = shell_glob.split("/"), pattern.split("/")
    if "**" not in b and "**" not in a and (len(a) != len(b) or not _segment_overlap(a[-1], b[-1])):
        return False  # the quick answer for most pairs: another depth or another file name
    memo: dict[tuple[int, int], bool] = {}

    def segments(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if j < len(b) and b[j] == "**":
            ok = segments(i, j + 1) or (i < len(a) and segments(i + 1, j))
        elif i < len(a) and a[i] == "**":
            # ``find / -exec ... {}``: any depth, but it names none of the pattern's directories
            wild = j < len(b) and not GLOB_CHARS.isdisjoint(b[j])
            ok = segments(i + 1, j) or (wild and segments(i, j + 1))
        elif i == len(a) or j == len(b):
            ok = i == len(a) and j == len(b)
        else:
            ok = _segment_overlap(a[i], b[j]) and segments(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    return len(shell_glob) <= 1024 and segments(0, 0)


def _segment_tokens(seg: str) -> list[str]:
    """A name glob as tokens: ``*``, ``?`` (also standing for a bracket expression), or a
    literal character; runs of ``*`` are one."""
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        end = seg.find("]", i + 2) if c == "[" else -1
        if end > 0:
            out.append("?")
            i = end + 1
            continue
        if not (c == "*" and out and out[-1] == "*"):
            out.append(c)
        i += 1
    return out


def _segment_overlap(x: str, y: str) -> bool:
    """Could one file name match both name globs (``*``, ``?``, ``[...]``; no ``/``)?"""
    tx, ty = _segment_tokens(x), _segment_tokens(y)
    if tx and ty and {tx[0], ty[0]} & {"*", "?"} and "." in (tx[0], ty[0]):
        return False  # a wildcard never matches the leading dot of a hidden name
    if any(t in ("*", "?") for t in ty) and any(t in ("*", "?") for t in tx):
        # two wildcard names: the shell's must name the pattern's literal part (``*.pem`` and
        # ``id_*`` do; ``*``, ``x*`` and ``*FooBar*`` name no key file of ``*.pem``)
        literal = "".join(t for t in ty if t not in ("*", "?"))
        if literal not in "".join(t if t not in ("*", "?") else "\0" for t in tx):
            return False
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i < len(tx) and tx[i] == "*":
            ok = go(i + 1, j) or (j < len(ty) and go(i, j + 1))
        elif j < len(ty) and ty[j] == "*":
            ok = go(i, j + 1) or (i < len(tx) and go(i + 1, j))
        elif i == len(tx) or j == len(ty):
            ok = i == len(tx) and j == len(ty)
        else:
            ok = (tx[i] == ty[j] or "?" in (tx[i], ty[j])) and go(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    return go(0, 0)


def command_name_glob(pattern: str, name: str) -> bool:
    """Command names have one glob form, a trailing ``*`` (``mkfs*`` matches ``mkfs.ext4``)."""
    return pattern.endswith("*") and name.startswith(pattern[:-1])


# --- the effect vocabulary (``effects.py``; the ``effect`` match key) ---------------------------

EFFECT_OPS: dict[str, tuple[str, ...]] = {
    "file": ("read", "create", "write", "append", "edit", "truncate", "delete", "rename", "copy",
             "restore", "chmod", "touch"),
    "vcs-read": ("history", "refs", "reflog", "lost-objects", "remote", "stash"),
    "vcs-write": ("force-push", "push", "delete-remote-branch", "history-rewrite", "amend",
                  "delete-branch", "drop-stash", "stash", "hide-changes", "reset-hard", "clean",
                  "expire-reflog"),
    "package-install": ("install", "download", "uninstall"),
    "network": ("fetch", "upload", "connect", "listen", "lookup"),
    "process": ("signal", "sleep", "miner", "fill", "fork-bomb"),
    "env-read": ("dump", "secret"),
    "test-run": ("run",),
    "unknown": ("dynamic-target", "patch", "code-write", "tool", "sparse-checkout"),
}  # fmt: skip
EFFECT_KINDS = tuple(EFFECT_OPS)
PATH_CLASSES = {
    "source": "a workspace file of none of the classes below (the code under repair)",
    "test": "a workspace file matching the task type's test path patterns",
    "loose-test": "a test file directly in a workspace root (test_x.py beside setup.py): where "
    "agents write their scratch tests; it is also a test once history shows it is not the "
    "agent's own (a single command with no history cannot tell)",
    "test-config": "a test-runner configuration (pytest.ini, tox.ini, conftest.py, bin/test ...)",
    "shared-config": "a file that may hold test-runner settings (setup.cfg, pyproject.toml, "
    "package.json, Makefile, pom.xml ...)",
    "workspace-root": "a workspace root itself, or a glob directly in it",
    "git-dir": "a .git directory or anything inside it",
    "harness": "outside the workspace: the grader's and harness's files (resolution.paths.harness)",
    "packages": "installed packages and interpreters: site-packages, node_modules, the test "
    "runner's executable (resolution.paths.packages)",
    "scratch": "inside a temp root or resolution.paths.scratch",
    "outside": "outside every workspace root, not scratch",
    "credential": "a credential or secret file (resolution.paths.credential)",
    "persistence": "a shell rc, cron, systemd, authorized_keys ... file (resolution.paths"
    ".persistence)",
    "device": "a block or character device other than null, zero, random and ttys",
    "unknown": "a path known only at run time",
}
ORIGINS = {
    "agent": "created by the agent earlier in this trajectory (or this command): its own file",
    "pre-existing": "known to have existed before the agent changed it (read, edited, in the "
    "final patch as modified)",
    "unknown": "neither is known (a single command has no history)",
}
REF_SCOPES = ("head", "ancestor", "other-refs", "commit", "remote")
INSTALL_SOURCES = ("index", "url", "vcs", "local", "editable", "requirements")
HOST_CLASSES = ("local", "metadata", "code-host", "remote", "unknown")
SIGNAL_TARGETS = ("parent", "session", "all", "init", "by-name", "workspace", "pid", "unknown")
# ``effect`` match fields: name -> (kinds it applies to, value shape, allowed values)
EFFECT_FIELDS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "op": (EFFECT_KINDS, "list", ()),  # allowed values: EFFECT_OPS of the rule's kinds
    "path_class": (("file",), "list", tuple(PATH_CLASSES)),
    "not_path_class": (("file",), "list", tuple(PATH_CLASSES)),
    "source_class": (("file",), "list", tuple(PATH_CLASSES)),
    "origin": (("file",), "list", tuple(ORIGINS)),
    "content_known": (("file",), "bool", ()),
    "content_regex": (("file",), "regex", ()),
    "path_regex": (("file",), "regex", ()),
    "detail_regex": (("file", "process", "network", "unknown"), "regex", ()),
    "recursive": (("file",), "bool", ()),
    "agent_modified": (("file",), "bool", ()),
    "test_literals": (("file",), "bool", ()),
    "final": (("file",), "bool", ()),
    "ref_scope": (("file", "vcs-read"), "list", REF_SCOPES),
    "source": (("package-install",), "list", INSTALL_SOURCES),
    "target_dir": (("package-install",), "bool", ()),
    "upgrade": (("package-install",), "bool", ()),
    "pinned": (("package-install",), "bool", ()),
    "repo_package": (("package-install",), "bool", ()),
    "maybe_repo_package": (("package-install",), "bool", ()),
    "tool": (("package-install",), "bool", ()),
    "host_class": (("network",), "list", HOST_CLASSES),
    "target": (("process",), "list", SIGNAL_TARGETS),
    "unbounded": (("process",), "bool", ()),
    "selection": (("test-run",), "bool", ()),
    "regenerates": (("test-run",), "bool", ()),
}


# packages that build, test, lint or install a project rather than being its code: upgrading
# them is environment work, not a way to a newer release of the code under repair
DEV_TOOLS = frozenset(
    {"pip", "setuptools", "wheel", "build", "twine", "virtualenv", "uv", "poetry", "pipenv",
     "tox", "nox", "pre-commit", "coverage", "hypothesis", "mypy", "ruff", "black", "flake8",
     "isort", "pylint", "ipython", "ipdb", "pdbpp", "setuptools-scm", "cython", "meson",
     "ninja", "cmake", "scikit-build", "hatchling", "flit", "pdm",
     "npm", "yarn", "pnpm", "typescript", "prettier", "jest", "mocha", "vitest", "ts-node"}
)  # fmt: skip


def is_dev_tool(name: str) -> bool:
    """A package of ``DEV_TOOLS`` or a plugin of one (``pytest-xdist``, ``types-requests``)."""
    name = name.lower().replace("_", "-")
    return name in DEV_TOOLS or name.startswith(
        ("pytest", "types-", "flake8-", "mypy-", "@types/", "eslint", "@typescript-eslint/")
    )
