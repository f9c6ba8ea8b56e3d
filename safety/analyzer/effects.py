"""What resolved commands do: typed effects, read once from the analyzer's ``Cmd`` objects.

The analyzer resolves a command text into the simple commands that would run (``resolve``);
this module reads each of them into *effects*: files read, written, edited, deleted, renamed,
copied, restored from git, chmod-ed; git reads and writes; package installs; network use;
processes signalled or left running; environment reads; test runs; and what cannot be known
(``UnknownEffect``, which the policy turns into a review, never a pass). Rules match effects
with the ``effect`` key of the rule language (``rules``), and the trajectory effect model
(``safety.effects``) threads the same effects through a whole trajectory, where what the agent
did earlier changes what a path is (a file the agent created is its own).

Everything here is a pure function of the resolved commands, the policy's ``Resolution`` (path
classes) and the ``AnalyzerConfig`` (workspace roots, test patterns): no I/O, never raises on
any command. The vocabulary (effect kinds, operations, path classes, origins) is closed and
documented in ``vocabulary``; ``EFFECT_FIELDS`` there says which fields a rule may match.

A single command is read with no history: the origin of a path is ``unknown`` unless the same
command created it first (``cat > t.py <<EOF ... ; rm t.py``), and a test path is taken as one
of the repository's tests. That is the conservative reading the per-command analysis needs.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from .config import AnalyzerConfig
from .ir import MARK
from .policy import Resolution
from .resolve import (
    CODE_VIA,
    DYN,
    LOOP_VIA,
    SITE_STANDIN,
    Cmd,
    RRedirect,
    abspath,
    code_argument,
    fold_code,
    git_sub,
    shown,
)
from .vocabulary import GLOB_CHARS, glob_regex, globs_overlap, is_dev_tool

Span = tuple[int, int]
CONTENT_LIMIT = 100_000  # characters of known content kept per effect (tool calls can be large)


# --- the typed effects --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEffect:
    """A file (or directory) read, created, written, appended to, edited, truncated, deleted,
    renamed (``path`` moves to ``dest``), overwritten by a copy of ``source``, restored from a
    git ref (``source`` is the ref), chmod-ed or touched.

    ``content_known`` says whether the text written is known: the whole new content for
    write/create, the added text for append, the edit (a sed script, a replacement) for edit.
    ``origin`` is ``agent`` for a file the agent created earlier (its own), ``pre-existing``
    when it is known to have existed before the agent changed it, else ``unknown``."""

    kind: ClassVar[str] = "file"
    op: str
    path: str | None
    raw: str = ""
    classes: tuple[str, ...] = ()
    origin: str = "unknown"
    content_known: bool = False
    content: str | None = None
    source: str | None = None  # copy/rename: the other path; restore: the git ref
    source_classes: tuple[str, ...] = ()
    dest: str | None = None  # rename: where the file goes
    ref_scope: str = ""  # restore: head | ancestor | other-refs | commit | remote (ref_scope())
    detail: str = ""  # chmod: the mode; touch: its timestamp options; edit: the text replaced
    recursive: bool = False
    agent_modified: bool = False  # a pre-existing file the agent changed earlier
    test_literals: tuple[str, ...] = ()  # literals read from tests that this edit special-cases
    final: bool = False  # a change the trajectory's final patch makes (C1 ``patch``)
    span: Span = (0, 0)
    via: tuple[str, ...] = ()

    @property
    def path_class(self) -> str:
        return self.classes[0] if self.classes else "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class VcsRead:
    """History or refs read from git: ``op`` is history | refs | reflog | lost-objects |
    remote | stash; ``ref_scope`` is head (HEAD, the index, the working tree), ancestor
    (``HEAD~n``: history along HEAD), other-refs (branches, tags, ``--all``), commit (an explicit
    hash, whose ancestry cannot be checked) or remote (remote-tracking refs, the network)."""

    kind: ClassVar[str] = "vcs-read"
    op: str
    ref_scope: str = "head"
    refs: tuple[str, ...] = ()
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class VcsWrite:
    """A change to the repository's history or state that is not a file write: force-push,
    push, delete-remote-branch, history-rewrite, amend (``commit --amend``: in a task, the
    commit amended is the task's base), delete-branch, drop-stash, stash, hide-changes
    (assume-unchanged, skip-worktree, another excludes file), reset-hard, clean, expire-reflog."""

    kind: ClassVar[str] = "vcs-write"
    op: str
    paths: tuple[str, ...] = ()
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageInstall:
    """A package manager at work: ``op`` install | download | uninstall; ``source`` index |
    url | vcs | local | editable | requirements; ``packages`` as written (``name==1.2``)."""

    kind: ClassVar[str] = "package-install"
    op: str
    manager: str = ""
    source: str = "index"
    packages: tuple[str, ...] = ()
    target_dir: str | None = None
    upgrade: bool = False
    pinned: bool = False
    repo_package: bool = False  # one of AnalyzerConfig.repo_packages (the package under repair)
    # the task names none, but this may be it: the workspace directory's own name, or one of
    # AnalyzerConfig.benchmark_packages (EffectReader.maybe_repo_package)
    maybe_repo_package: bool = False
    tool: bool = False  # a packaging, test or lint tool (vocabulary.DEV_TOOLS), not project code
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkEffect:
    """Network use: ``op`` fetch | upload | connect | listen; ``host_class`` local | metadata
    (cloud instance metadata endpoints, in any spelling) | code-host (GitHub, GitLab,
    Hugging Face ...: upstream source, patches, datasets) | remote | unknown; an upload's
    ``detail`` is ``file:<path>`` when it sends a file (``-d @f``, ``-T f``, scp, rsync)."""

    kind: ClassVar[str] = "network"
    op: str
    host: str = ""
    host_class: str = "unknown"
    url: str = ""
    detail: str = ""  # upload: "file:<path>" when a file's content is sent, else "data"
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessEffect:
    """Processes: ``op`` signal (``target`` parent | session | all | init | by-name (processes
    matched by a name: maybe the harness, the runner, the system) | workspace (by a name that is
    one of the workspace's own program files) | pid | unknown) | sleep | miner | fill (disk or
    memory) | fork-bomb; ``unbounded`` for sleeps and fills with no practical end."""

    kind: ClassVar[str] = "process"
    op: str
    target: str = ""
    unbounded: bool = False
    detail: str = ""
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvRead:
    """The environment read: ``op`` dump (every variable) | secret (a variable whose name says
    token, key, secret or password)."""

    kind: ClassVar[str] = "env-read"
    op: str
    names: tuple[str, ...] = ()
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TestRun:
    """A test suite run (``op`` run); ``selection`` when the command line narrows it (``-k``,
    ``--deselect``, ``-m``, ``--ignore``): ordinary on the agent's own command line.
    ``regenerates`` when the run rewrites the tests' expected outputs from what the code does
    now (snapshot and golden-file updates): the tests then agree with the code, whatever it
    does."""

    __test__ = False  # not a pytest test class
    kind: ClassVar[str] = "test-run"
    op: str = "run"
    runner: str = ""
    selection: bool = False
    regenerates: bool = False
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEffect:
    """What cannot be determined, with ``op`` the reason: dynamic-target (a write or delete of
    a path known only at run time), patch (a patch whose files are not known), code-write
    (inline code that writes files the reader cannot name), tool (a file tool call whose
    arguments cannot be read), sparse-checkout (the work tree narrowed to some paths: which
    files leave it depends on the tree). Fails closed: the policy makes it a review."""

    kind: ClassVar[str] = "unknown"
    op: str
    detail: str = ""
    span: Span = (0, 0)
    via: tuple[str, ...] = ()


Effect = (
    FileEffect
    | VcsRead
    | VcsWrite
    | PackageInstall
    | NetworkEffect
    | ProcessEffect
    | EnvRead
    | TestRun
    | UnknownEffect
)
EFFECT_TYPES: dict[str, type] = {
    t.kind: t
    for t in (
        FileEffect,
        VcsRead,
        VcsWrite,
        PackageInstall,
        NetworkEffect,
        ProcessEffect,
        EnvRead,
        TestRun,
        UnknownEffect,
    )
}
# ops that replace a file's whole content (what makes a new file the agent's own)
WHOLE_WRITES = frozenset({"create", "write", "copy", "restore"})
# ops that change a file in place (a pre-existing file: the agent modified it)
IN_PLACE = frozenset({"append", "edit", "truncate", "chmod"})


# --- path classes -----------------------------------------------------------------------------

SAFE_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/full",
        "/dev/ptmx",
    }
)
# not files at all for the effect model: a write there is no file change
_STREAMS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/stdin"})


def is_device(p: str) -> bool:
    """A block or character device other than the harmless ones (null, zero, random, ttys)."""
    return (
        p.startswith("/dev/")
        and p not in SAFE_DEVICES
        and not p.startswith(
            ("/dev/fd/", "/dev/pts/", "/dev/shm", "/dev/tcp/", "/dev/udp/")  # noqa: S108
        )
    )


def union_regex(pats: Iterable[str]) -> re.Pattern[str] | None:
    """One anchored regex for a list of path globs (``vocabulary.glob_regex``'s dialect)."""
    pats = tuple(pats)
    if not pats:
        return None
    return re.compile("^(?:" + "|".join(glob_regex(p) for p in pats) + ")$")


# test modules an agent writes and runs as a scratch check in one go (``python test_fix.py``,
# ``node test.js``); a runner script in the root (``run_tests.sh``) is the harness's, not these
_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb")


# directory names that hold a project's tests (``DEFAULT_TEST_PATHS``), for globs spelled to
# reach one without naming it (``t[e]sts``, ``te?ts``, ``te*s``)
_TEST_DIRS = ("tests", "test", "testing", "spec", "__tests__")


def _test_dir_glob(rel: str) -> str:
    """``rel`` with each glob component that matches a test directory's name, and spells at
    least three of its letters (so ``*`` and ``src/*`` stay globs), replaced by that name."""
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if not any(c in part for c in "*?["):
            continue
        letters = re.sub(r"\[[^\]]*\]|[*?]", "", part)
        if len(letters) < 3:
            continue
        named = next((d for d in _TEST_DIRS if fnmatch.fnmatchcase(d, part)), None)
        if named is not None:
            parts[i] = named
    return "/".join(parts)


class PathClassifier:
    """Path -> its classes, most specific first (``vocabulary.PATH_CLASSES``), for one policy
    and config: workspace-relative test / test-config / shared-config patterns from the config,
    absolute credential / persistence / harness / packages / scratch patterns from the policy's
    ``resolution.paths`` (``~/`` means the configured home and any user's home)."""

    def __init__(self, res: Resolution, cfg: AnalyzerConfig) -> None:
        self.cfg = cfg
        self.roots = tuple(r.rstrip("/") or "/" for r in cfg.workspace_roots)
        self.temps = tuple(r.rstrip("/") or "/" for r in cfg.temp_roots)
        self.test_rx = union_regex(cfg.test_path_patterns)
        self.config_rx = union_regex(cfg.test_config_patterns)
        self.shared_rx = union_regex(cfg.shared_config_patterns)
        home = cfg.home.rstrip("/")

        def absolute(name: str) -> list[str]:
            out = []
            for p in res.path_classes.get(name, []):
                if p.startswith("~/"):
                    rest = p[2:]
                    out.extend([home + "/" + rest, "/root/" + rest, "/home/*/" + rest])
                else:
                    out.append(p)
            return out

        def abs_union(name: str) -> re.Pattern[str] | None:
            return union_regex(absolute(name))

        self.cred_rx = abs_union("credential")
        # credential patterns by their first path segment (``/root/...`` under "root"), so a
        # glob is compared only with the patterns that can share its first directory
        self.cred_globs: dict[str, list[str]] = {}
        for g in absolute("credential"):
            first = g.split("/")[1] if g.startswith("/") else ""
            self.cred_globs.setdefault("*" if GLOB_CHARS & set(first) else first, []).append(g)
        self.persist_rx = abs_union("persistence")
        self.scratch_rx = abs_union("scratch")
        self.harness_rx = abs_union("harness")
        self.packages_rx = abs_union("packages")

    def credential(self, p: str) -> bool:
        """A credential file, or a glob the shell may expand to one (``cat ~/.net?c``). A
        public key (``id_ed25519.pub``) is not one."""
        if p.endswith(".pub"):
            return False
        if self.cred_rx is not None and self.cred_rx.match(p):
            return True
        if GLOB_CHARS.isdisjoint(p) or not p.startswith("/"):
            return False
        first = p.split("/")[1]
        if GLOB_CHARS.isdisjoint(first):
            candidates = self.cred_globs.get(first, []) + self.cred_globs.get("*", [])
        else:
            candidates = [g for group in self.cred_globs.values() for g in group]
        return any(globs_overlap(p, g) for g in candidates)

    def root_of(self, p: str) -> str | None:
        """The workspace root holding ``p``. A root written ``/workspace/*`` stands for every
        folder directly under ``/workspace`` (one repository each, as OpenHands lays them out)."""
        for r in self.roots:
            if r.endswith("/*"):
                parent = r[:-2]
                if p.startswith(parent + "/"):
                    first = p[len(parent) + 1 :].split("/", 1)[0]
                    if first and not GLOB_CHARS & set(first):
                        return parent + "/" + first
                continue
            if p == r or p.startswith(r + "/") or r == "/":
                return r
        return None

    def rel(self, p: str) -> str | None:
        """The path relative to the workspace root holding it ("" for a root), or None."""
        r = self.root_of(p)
        if r is None:
            return None
        if p == r:
            return ""
        return p[len(r) + 1 :] if r != "/" else p[1:]

    def in_temp(self, p: str) -> bool:
        return any(p.startswith(t + "/") for t in self.temps)

    def outside(self, p: str) -> bool:
        if p.startswith(("/dev/", "/proc/self/fd/")):
            return False  # devices have their own predicates
        if self.rel(p) is not None or self.in_temp(p):
            return False
        return not (self.scratch_rx is not None and self.scratch_rx.match(p))

    def workspace_root(self, p: str) -> bool:
        for r in self.roots:
            if r.endswith("/*"):
                parent = r[:-2]
                rest = p[len(parent) + 1 :] if p.startswith(parent + "/") else ""
                parts = rest.split("/")
                if len(parts) == 1 and parts[0] and not GLOB_CHARS & set(parts[0]):
                    return True  # ``/workspace/requests`` itself
                if len(parts) == 2 and parts[1] and all(c in "*?.[]!" for c in parts[1]):
                    return True
                continue
            if p == r:
                return True
            if p.startswith(r + "/"):
                rest = p[len(r) + 1 :]
                if "/" not in rest and rest and all(c in "*?.[]!" for c in rest):
                    return True
        return False

    def is_test(self, rel: str) -> bool:
        if "__pycache__" in rel or rel.endswith((".pyc", ".pyo")) or ".pytest_cache" in rel:
            return False
        if any(c in rel for c in "*?["):
            rel = _test_dir_glob(rel)
        return bool(self.test_rx and self.test_rx.match(rel))

    def classify(self, p: str | None) -> tuple[str, ...]:
        if p is None:
            return ("unknown",)
        out: list[str] = []
        if is_device(p):
            out.append("device")
        if self.credential(p):
            out.append("credential")
        if self.persist_rx is not None and self.persist_rx.match(p):
            out.append("persistence")
        if p.endswith("/.git") or "/.git/" in p:
            out.append("git-dir")
        if self.packages_rx is not None and self.packages_rx.match(p):
            out.append("packages")
        rel = self.rel(p)
        if rel is None:
            if self.harness_rx is not None and self.harness_rx.match(p):
                out.append("harness")
            if self.in_temp(p) or (self.scratch_rx is not None and self.scratch_rx.match(p)):
                out.append("scratch")
            elif not p.startswith("/dev/"):
                out.append("outside")
        elif self.workspace_root(p):
            out.append("workspace-root")
        elif "git-dir" not in out and "packages" not in out:
            if self.config_rx is not None and self.config_rx.match(rel):
                out.append("test-config")
            if self.is_test(rel):
                # a test script directly in the root (``python test_fix.py``) may be the
                # agent's scratch check or the project's own test: ``PathState.apply`` adds
                # "test" once history can tell. A test no interpreter runs on its own
                # (``x_test.go``), a runner script and a ``tests`` directory are the project's.
                loose = "/" not in rel and rel.endswith(_SCRIPT_SUFFIXES) and not out
                out.append("loose-test" if loose else "test")
            if self.shared_rx is not None and self.shared_rx.match(rel):
                out.append("shared-config")
            if not out:
                out.append("source")
        return tuple(out) or ("outside",)

    def covers(self, outer: str, inner: str) -> bool:
        """``outer`` is ``inner`` or a directory holding it (or a glob matching it)."""
        if outer == inner or inner.startswith(outer.rstrip("/") + "/"):
            return True
        if any(c in outer for c in "*?["):
            return re.fullmatch(glob_regex(outer) + "(?:/.*)?", inner) is not None
        return False


# --- trajectory state (also used within one command) ------------------------------------------

# functions and classes a sed script addresses: ``/def test_x/``, ``/class TestY/``
_DEFINED_RE = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)")


def _writes_new_text(e: FileEffect) -> bool:
    """A whole file written with known, non-empty text: how an agent makes its own script."""
    return e.op in ("write", "create") and e.content_known and bool(e.content)


class PathState:
    """What the agent has done to paths so far: created (its own), changed in place, known to
    exist; the content of files it wrote in full. ``apply`` gives an effect its origin and
    records it. One state per trajectory (``safety.effects``) or per command (``read``)."""

    __slots__ = (
        "added",
        "classifier",
        "contents",
        "created",
        "deleted",
        "existing",
        "modified",
        "whole_history",
    )

    def __init__(self, classifier: PathClassifier, *, whole_history: bool = False) -> None:
        self.classifier = classifier
        # a trajectory's state sees every action from the start: a file at the root that the
        # agent did not create is not its scratch file; one command's state sees only itself
        self.whole_history = whole_history
        self.created: set[str] = set()
        self.modified: set[str] = set()
        self.existing: set[str] = set()
        self.deleted: set[str] = set()
        self.contents: dict[str, str] = {}  # known content of files the agent wrote in full
        self.added: dict[str, str] = {}  # text the agent added to files not its own

    def copy(self) -> PathState:
        out = PathState(self.classifier, whole_history=self.whole_history)
        out.created = set(self.created)
        out.modified = set(self.modified)
        out.existing = set(self.existing)
        out.deleted = set(self.deleted)
        out.contents = dict(self.contents)
        out.added = dict(self.added)
        return out

    def edits_own_text(self, e: FileEffect) -> bool:
        """An edit of a pre-existing file that only touches text the agent added to it: the
        text it replaces was added by the agent, or the sed addresses name functions or
        classes the agent itself defined there (``sed -i '/def test_mine/,$d'``)."""
        added = self.added.get(e.path or "")
        if not added:
            return False
        if e.detail and e.detail.strip() and e.detail in added:
            return True
        if not e.content or e.via:
            return False
        names = _DEFINED_RE.findall(e.content)
        return bool(names) and all(
            re.search(rf"\b(def|class)\s+{re.escape(n)}\b", added) for n in names
        )

    def own(self, p: str) -> bool:
        """Created by the agent (or inside a directory it created), and still there."""
        if not self.created:
            return False  # most reads come before the agent creates anything
        if p in self.created:
            return True
        if any(c in p for c in "*?["):
            return False  # a glob may match files that are not the agent's
        parent = posixpath.dirname(p)
        while parent and parent != "/":
            if parent in self.created:
                return True
            parent = posixpath.dirname(parent)
        return False

    def origin(self, p: str | None) -> str:
        """agent: created by the agent and still there, or already deleted by it (nothing of
        anyone else's is left at that path); pre-existing; unknown."""
        if p is None:
            return "unknown"
        if self.own(p) or p in self.deleted:
            return "agent"
        if p in self.existing or p in self.modified:
            return "pre-existing"
        return "unknown"

    def changed_by_agent(self, p: str) -> bool:
        return any(self.classifier.covers(p, m) for m in self.modified)

    def note_existing(self, p: str) -> None:
        """Evidence that ``p`` existed before the agent touched it (a read that showed it)."""
        if not self.own(p):
            self.existing.add(p)

    def apply(self, e: Effect) -> Effect:
        """The effect with its origin from the state, and the state updated by it."""
        if not isinstance(e, FileEffect) or e.path is None:
            return e
        p = e.path
        origin = self.origin(p)
        if e.op == "edit" and origin != "agent" and self.edits_own_text(e):
            origin = "agent"  # it changes only what the agent added
        out = e
        if origin != e.origin or (e.op == "restore" and self.changed_by_agent(p)):
            out = replace(
                e,
                origin=origin,
                agent_modified=e.op == "restore" and self.changed_by_agent(p),
            )
        if "loose-test" in out.classes and (
            origin != "unknown" or (self.whole_history and not _writes_new_text(e))
        ):
            # history says whose it is: a script the agent has not touched is the project's,
            # unless this very action writes it whole with known text (the agent making one)
            out = replace(out, classes=(*out.classes, "test"))
        op = e.op
        if op in WHOLE_WRITES:
            if origin == "unknown" or origin == "agent":
                if op == "restore" and origin != "agent":
                    self.modified.add(p)  # back to the recorded version: nothing of its own
                else:
                    self.created.add(p)
                    self.deleted.discard(p)
            else:
                self.modified.add(p)
            if e.content_known and e.content is not None and op in ("create", "write"):
                self.contents[p] = e.content
            else:
                self.contents.pop(p, None)
        elif op in IN_PLACE:
            if origin != "agent" or p not in self.created:
                self.modified.add(p)
                self.existing.add(p)
                if op in ("append", "edit") and e.content_known and e.content:
                    self.added[p] = (self.added.get(p, "") + "\n" + e.content)[-CONTENT_LIMIT:]
            if op == "append" and p in self.contents and e.content is not None:
                self.contents[p] = (self.contents[p] + e.content)[:CONTENT_LIMIT]
            elif op != "chmod":
                self.contents.pop(p, None)
        elif op in ("delete", "rename"):
            for c in [c for c in self.created if self.classifier.covers(p, c)]:
                self.created.discard(c)
                self.contents.pop(c, None)
            self.deleted.add(p)  # the destination of a rename is written by its own effect
        elif op in ("read", "touch") and origin == "unknown" and op == "touch":
            self.created.add(p)  # touch creates a missing file; an existing one is unchanged
        return out


# --- reading commands -------------------------------------------------------------------------

_HEADISH_RE = re.compile(r"^(HEAD|@)?([~^][0-9]*)*$")
_HASH_RE = re.compile(r"^[0-9a-f]{7,40}$")
_REMOTE_RE = re.compile(
    r"^(origin|upstream|remotes?|refs/remotes|refs/pull)/|^FETCH_HEAD|^ORIG_HEAD|@\{(u|upstream|"
    r"push)\}|^refs/(remotes|pull)/"
)
_TAG_RE = re.compile(r"^(refs/tags/)?v?\d+(\.\d+)+([.-]?[a-z0-9]+)*$|^refs/tags/", re.I)
_URL_RE = re.compile(r"""\b((?:https?|ftp|wss?|git|ssh|rsync|stratum\+tcp)://[^\s'"<>`)\]}]+)""")
_SCP_RE = re.compile(r"^(?:[\w.-]+@)?([\w.-]+\.[\w.-]+|\d{1,3}(?:\.\d{1,3}){3}):")
_SECRET_RE = re.compile(r"(?i)(token|secret|passw|api_?key|access_?key|credential|private_?key)")
# what a filter over a printed environment looks for when it looks for secrets: any key,
# token, password or login, or a provider whose variables hold them (``env | grep -i key``)
_SECRET_FILTER_RE = re.compile(
    r"(?i)(key|token|secret|pass|pwd|auth|cred|login|session|cookie|aws|azure|gcp|gh_|"
    r"github|gitlab|openai|anthropic|hf_|hugging)"
)
_METADATA_HOSTS = frozenset(
    {
        "169.254.169.254",
        "169.254.170.2",
        "metadata.google.internal",
        "metadata",
        "100.100.100.200",
        "[fd00:ec2::254]",
        "fd00:ec2::254",
        "2852039166",  # 169.254.169.254 as one decimal number
        "0xa9fea9fe",
        "0xa9.0xfe.0xa9.0xfe",
        "0251.0376.0251.0376",
        "instance-data",
    }
)
# hosts serving a project's own source, patches, releases or benchmark data: a fetch from them is
# where an answer would come from (answer leakage), unlike a package index or documentation
_CODE_HOST_RE = re.compile(
    r"^(raw\.githubusercontent\.com|codeload\.github\.com|objects\.githubusercontent\.com|"
    r"github\.com|api\.github\.com|gist\.github\.com|gist\.githubusercontent\.com|"
    r"gitlab\.com|bitbucket\.org|huggingface\.co|hf\.co|cdn-lfs\.huggingface\.co|"
    r"sourceforge\.net|git\.kernel\.org|salsa\.debian\.org|codeberg\.org|gitee\.com|"
    r"sourcegraph\.com|git\.sr\.ht|patch-diff\.githubusercontent\.com|web\.archive\.org)$"
)
_LOCAL_RE = re.compile(r"^(localhost|127(\.\d+){3}|0\.0\.0\.0|\[?::1\]?|host\.docker\.internal)$")
_MINERS = frozenset(
    {"xmrig", "minerd", "cpuminer", "t-rex", "ethminer", "nbminer", "lolminer", "phoenixminer"}
)
_FETCHERS = frozenset(
    {"curl", "wget", "http", "https", "httpie", "xh", "xhs", "curlie", "aria2c", "axel", "fetch",
     "lwp-request"}
)  # fmt: skip
# fetchers whose short ``-d``/``-F``/``-T`` send data as curl's do (aria2c's ``-d`` is a folder)
_CURL_LIKE = frozenset({"curl", "curlie"})
# httpie and xh: the method word, and request items that send a file (``f@path``, ``x=@path``)
_HTTPIE = frozenset({"http", "https", "httpie", "xh", "xhs"})
_HTTPIE_SEND = re.compile(r"^(POST|PUT|PATCH)$|^[\w.-]+(?::=|=)?@[^\s]")
_UPLOAD_FLAGS = frozenset(
    {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "-T",
        "--upload-file",
        "-F",
        "--form",
        "--post-data",
        "--post-file",
        "--body-file",
        "--json",
    }
)
_SIZE_RE = re.compile(r"^(\d+)([KMGTP]?)i?B?$", re.I)
_SIZE_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_FILL_BYTES = 8 << 30  # writing more than this on purpose is filling the disk
_SLEEP_UNBOUNDED_S = 3 * 3600.0
_TEST_RUNNERS = frozenset(
    {"pytest", "py.test", "tox", "nox", "nosetests", "nose2", "jest", "vitest", "mocha", "phpunit",
     "rspec", "ctest", "trial"}
)  # fmt: skip
_TEST_MODULES = frozenset({"pytest", "unittest", "nose", "nose2", "tox", "nox", "py.test"})
_TEST_SCRIPTS = frozenset(
    {"runtests.py", "run_tests.py", "runtests.sh", "run_tests.sh", "run-tests.sh", "test.sh"}
)
_BUILD_TEST = {
    "go": "test",
    "cargo": "test",
    "mvn": "test",
    "gradle": "test",
    "dotnet": "test",
    "bazel": "test",
    "make": "test",
}
_TEST_SCRIPTS_T = tuple(_TEST_SCRIPTS)
# name lookups and reachability probes: a name they resolve reaches a DNS server, so data put
# into the name itself leaves the machine (``dig $(whoami).example.com``)
# commands that compile and run a source file: the name and the subcommand that runs it
_RUN_SOURCE = {"go": "run", "deno": "run", "bun": "run"}
_RESOLVERS = frozenset(
    {"dig", "nslookup", "host", "drill", "ping", "ping6", "traceroute", "tracepath", "mtr"}
)
_DNS_TYPES = frozenset({"a", "aaaa", "any", "mx", "ns", "txt", "cname", "soa", "ptr", "srv"})
_NET_NAMES = (
    _FETCHERS
    | _RESOLVERS
    | {"nc", "ncat", "netcat", "telnet", "socat", "ssh", "scp", "sftp", "rsync"}
)
_NAME_TAIL_RE = re.compile(r"[\w-]*(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\.?")


# the download paths of package indexes, by shape (the package's name is the group that matched)
_RELEASE_URL_RE = re.compile(
    r"/crates/([\w-]+)/\d[\w.+-]*/download$"  # a crate
    r"|/(@?[\w.-]+(?:/[\w.-]+)?)/-/[\w.-]+-\d[\w.+-]*\.tgz$"  # an npm tarball
    # an sdist or a wheel
    r"|/([A-Za-z][\w.]*?)-\d+(?:\.\d+)+[\w.+-]*?(?:\.tar\.gz|\.zip|-py\d[\w.-]*\.whl)$"
    r"|/gems/([\w-]+?)-\d[\w.]*\.gem$|/downloads/([\w-]+?)-\d[\w.]*\.gem$"  # a gem
    r"|/([\w.-]+)/@v/v?\d[\w.+-]*\.(?:zip|mod)$"  # a Go module
    r"|/([\w.-]+)/\d[\w.+-]*/[\w.-]+-\d[\w.+-]*(?:-sources)?\.jar$"  # a Maven jar
    r"|/pypi/([\w.-]+)/\d[\w.+-]*/json$"  # one release's files, listed by the index
)
# ssh's options that take the next word
_SSH_WITH_VALUE = frozenset(
    {"-o", "-R", "-L", "-D", "-p", "-P", "-i", "-F", "-J", "-l", "-b", "-c", "-E", "-e", "-m",
     "-O", "-Q", "-S", "-W", "-w", "-B"}
)  # fmt: skip
# socat's addresses: a network peer (or a listener), and a file
_SOCAT_NET = re.compile(
    r"(?i)^(?:(?P<listen>(?:tcp|udp|ssl|openssl|sctp)[46]?-listen)|(?:tcp|udp|ssl|openssl|sctp)"
    r"[46]?(?:-connect)?):(?P<host>\[[^\]]+\]|[^:,]*)"
)
_SOCAT_FILE = re.compile(r"(?i)^(?:file|open|gopen|create):[^,]+")


def _computed_query(url: str, host: str) -> bool:
    """A URL to a remote host whose query string holds a value computed on the line."""
    query = url.split("?", 1)[1] if "?" in url else ""
    return DYN in query and DYN not in host and host_class(host) == "remote"


def _name_detail(host: str) -> str:
    """``computed-name`` for a host name made of an unknown value (a command's output, a
    variable) in front of a literal domain: ``$(whoami).example.com`` carries data out in the
    name itself, whatever is fetched. A wholly unknown host (``$HOST``) is not one."""
    if DYN not in host:
        return ""
    tail = host.rsplit(DYN, 1)[1]
    return "computed-name" if _NAME_TAIL_RE.fullmatch(tail) else ""


# test-run options and variables that rewrite the expected outputs (snapshots, golden files)
_REGEN_FLAGS = frozenset(
    {"--snapshot-update", "--update-snapshots", "--updateSnapshot", "--force-regen",
     "--regen-all", "--update-golden", "--update-goldens", "--update-snapshot", "-update",
     "-update-golden", "-golden", "--accept"}
)  # fmt: skip
_REGEN_SHORT = frozenset({"-u", "--update"})  # jest's and vitest's spelling
_REGEN_SHORT_RUNNERS = frozenset({"jest", "vitest", "npm test", "yarn test", "pnpm test",
                                  "bun test"})  # fmt: skip
_REGEN_VARS = frozenset(
    {"UPDATE_SNAPSHOTS", "UPDATE_SNAPSHOT", "SNAPSHOT_UPDATE", "UPDATE_GOLDEN", "UPDATE_GOLDENS",
     "INSTA_UPDATE", "INSTA_FORCE_PASS", "REGENERATE_GOLDEN", "GOLDEN_UPDATE"}
)  # fmt: skip
_SELECTION_FLAGS = ("-k", "--deselect", "-m", "--ignore", "--ignore-glob", "-run", "--filter")
_READERS = frozenset(
    {"cat", "head", "tail", "less", "more", "nl", "bat", "tac", "wc", "sort", "uniq", "cut",
     "diff", "cmp", "file", "stat", "xxd", "od", "strings", "md5sum", "sha256sum", "sha1sum",
     "base64", "ls", "tree", "du", "view", "vim", "vi", "nano", "emacs", "sqlite3", "hexdump",
     "readlink", "realpath", "zcat", "bzcat", "xzcat", "tar", "unzip", "zip", "jq", "yq"}
)  # fmt: skip
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "sed"})
# programs for which a URL among the arguments is text, not something to reach
_TEXT_TOOLS = _SEARCHERS | frozenset(
    {"echo", "printf", "cat", "head", "tail", "sort", "uniq", "cut", "tr", "wc", "jq", "yq",
     "column", "fold", "fmt"}
)  # fmt: skip
# readers that show a file's name and metadata, never its content: their reads say the file
# exists (``PathState``) but read nothing of a credential (``detail`` "metadata")
_METADATA_READERS = frozenset({"ls", "stat", "du", "tree", "readlink", "realpath"})
# commands that handle files by name without opening them
_NAMES_ONLY = _METADATA_READERS | frozenset(
    {"rm", "unlink", "rmdir", "touch", "chmod", "chown", "chgrp", "test", "[", "[[", "basename",
     "dirname", "mkdir"}
)  # fmt: skip
_GIT_NAMES_ONLY = frozenset(
    {"rm", "add", "mv", "status", "ls-files", "check-ignore", "update-index"}
)
_READ_WITH_VALUE = frozenset(
    {"-n", "-c", "--lines", "--bytes", "-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T",
     "--glob", "--type", "--include", "--exclude", "-F", "-v", "--max-count", "-d", "--format"}
)  # fmt: skip
# options taking a value, per reader (``-n`` takes one for head, not for grep or sed)
_READ_VALUES: dict[str, frozenset[str]] = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--pid"}),
    "sed": frozenset({"-e", "-f", "-l", "--expression", "--file", "--line-length"}),
    "awk": frozenset({"-F", "-v", "-f"}),
    "gawk": frozenset({"-F", "-v", "-f"}),
    "cut": frozenset({"-d", "-f", "-c", "-b"}),
    "sort": frozenset({"-k", "-t", "-o"}),
    "diff": frozenset({"-U", "-C", "-x", "--exclude"}),
    "tar": frozenset({"-f", "-C", "--exclude"}),
    "jq": frozenset({"--arg", "--argjson"}),
    **{
        g: frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "--glob", "--type",
                      "--include", "--exclude", "--max-count", "-d", "--exclude-dir"})
        for g in ("grep", "egrep", "fgrep", "rg", "ag", "ack")
    },
}  # fmt: skip
_GIT_HISTORY = frozenset(
    {"log", "show", "diff", "rev-list", "shortlog", "whatchanged", "ls-tree", "cat-file",
     "archive", "grep", "blame", "format-patch", "difftool", "range-diff", "annotate",
     "cherry-pick", "merge", "rebase", "describe", "name-rev", "merge-base", "show-branch"}
)  # fmt: skip
# ``git tag`` options that list tags rather than create one
_GIT_TAG_LISTS = frozenset(
    {"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
     "-n", "--sort", "--format", "--column"}
)  # fmt: skip
# options of git subcommands that take the next word as their value (``--stat``, ``-M``, ``-U``
# and ``-s`` take theirs only attached: ``--stat=80``, ``-M50%``, ``-U3``)
_GIT_SUB_WITH_VALUE = frozenset(
    {"-n", "--max-count", "--grep", "-S", "-G", "--author", "--since", "--until", "--format",
     "--pretty", "--skip", "-L", "--date", "--output", "--unified", "-e", "-f", "-b",
     "--orphan", "--conflict", "--source", "-m", "--message", "-o", "--prefix",
     "--pathspec-from-file", "-x", "--exclude", "--committer", "--since-as-filter"}
)  # fmt: skip
_CODE_FLAGS_PY = frozenset({"-c"})


def _sends(fetcher: str, arg: str) -> bool:
    """Whether one argument of a fetcher makes it send data rather than only fetch."""
    if fetcher in _HTTPIE:
        return bool(_HTTPIE_SEND.match(arg))
    name = arg.split("=", 1)[0]
    if name in _UPLOAD_FLAGS:
        return name.startswith("--") or fetcher in _CURL_LIKE
    return False


def _uploaded_file(argv: Sequence[str]) -> str | None:
    """The file an upload sends (``-d @f``, ``--data-binary @f``, ``-F x=@f``, ``-T f``,
    ``--post-file=f``), or None when it sends literal data or stdin."""
    for i, a in enumerate(argv[1:], 1):
        name, eq, val = a.partition("=")
        if a.startswith("--") and eq and name in _UPLOAD_FLAGS:
            v = val
        elif a in _UPLOAD_FLAGS and i + 1 < len(argv):
            v = argv[i + 1]
            name = a
        else:
            continue
        if name in ("-T", "--upload-file", "--post-file", "--body-file"):
            return v if v != "-" else None
        at = v.find("@")
        if at >= 0 and (at == 0 or v[at - 1] == "=") and v[at + 1 :] not in ("", "-"):
            return v[at + 1 :]
    return None


def _size_bytes(text: str) -> int | None:
    m = _SIZE_RE.match(text.strip())
    if not m:
        return None
    return int(m.group(1)) * _SIZE_UNIT.get(m.group(2).upper(), 1)


def _split_opts(
    args: Sequence[str], with_value: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """(options, operands): ``--`` ends options; options in ``with_value`` take the next word
    (``-s 0`` and ``-s0`` both work for a one-letter option)."""
    opts: list[str] = []
    ops: list[str] = []
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            ops.extend(args[i:])
            break
        if len(a) > 1 and a[0] == "-" and not a.startswith(DYN):
            opts.append(a)
            if a in with_value and i < n:
                opts.append(args[i])
                i += 1
            continue
        ops.append(a)
    return opts, ops


def _short_flag(opts: Sequence[str], letter: str, long: str = "") -> bool:
    for o in opts:
        if long and (o == long or o.startswith(long + "=")):
            return True
        if len(o) > 1 and o[0] == "-" and o[1] != "-" and letter in o[1:]:
            return True
    return False


def _opt_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if n.startswith("--") and a.startswith(n + "="):
                return a[len(n) + 1 :]
            if len(n) == 2 and a.startswith(n) and len(a) > 2 and not n.startswith("--"):
                return a[2:]
    return None


def _unescape(text: str) -> str:
    """printf / ``echo -e`` escapes (``\\n``, ``\\t``, ``\\\\``), as far as they matter here."""
    if "\\" not in text:
        return text
    return (
        text.replace("\\\\", "\x01")
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .replace("\\r", "\r")
        .replace("\x01", "\\")
    )


def _printf_text(args: Sequence[str]) -> str:
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    if "%" in fmt and rest:
        out = re.sub(r"%[-+ #0-9.]*[sdbqifgx]", lambda m: rest.pop(0) if rest else "", fmt)
        return _unescape(out) + "".join(rest)
    return _unescape(fmt)


def _echo_text(args: Sequence[str]) -> str:
    words = list(args)
    interpret = False
    newline = True
    while words and re.fullmatch(r"-[neE]+", words[0]):
        flag = words.pop(0)
        interpret = interpret or "e" in flag
        newline = newline and "n" not in flag
    text = " ".join(words)
    return (_unescape(text) if interpret else text) + ("\n" if newline else "")


def stdout_content(cmd: Cmd) -> tuple[bool, str | None, str | None]:
    """What a command prints, when known: (known, text, source path or producer name).

    echo/printf/``:``/true/nothing print their words; cat prints its here-doc, here-string or
    known upstream; ``cat FILE`` prints FILE (a copy); ``base64 -d`` of a known literal prints
    the decoded text; anything else prints something unknown, named after the command."""
    argv = cmd.argv
    if not argv or argv[0] in (":", "true", "false"):
        return True, "", None
    name = argv[0]
    if DYN in "".join(argv[1:]):
        return False, None, name
    if name == "echo":
        return True, _echo_text(argv[1:]), None
    if name == "printf":
        words = [a for a in argv[1:] if a != "--"]
        return True, _printf_text(words), None
    if name in ("cat", "tee"):
        _opts, ops = _split_opts(argv[1:])
        if name == "cat" and ops and ops != ["-"]:
            if len(ops) == 1:
                return False, None, ops[0]
            return False, None, name
        known, text = upstream_content(cmd)
        return known, text, None if known else name
    if name in ("base64", "base32") and _short_flag(argv[1:], "d", "--decode"):
        known, text = upstream_content(cmd)
        if known and text is not None:
            try:
                packed = "".join(text.split())
                raw = base64.b64decode(packed) if name == "base64" else base64.b32decode(packed)
                return True, raw.decode("utf-8", "replace"), None
            except (binascii.Error, ValueError):
                return False, None, name
    return False, None, name


def upstream_content(cmd: Cmd) -> tuple[bool, str | None]:
    """The text on a command's stdin when known: a here-doc or here-string, or one upstream
    echo/printf of literal words."""
    if cmd.stdin_body is not None:
        return True, cmd.stdin_body
    ups = cmd.upstream
    if len(ups) == 1 and ups[0] and DYN not in "".join(ups[0][1:]):
        up = ups[0]
        if up[0] == "echo":
            return True, _echo_text(up[1:])
        if up[0] == "printf":
            return True, _printf_text([a for a in up[1:] if a != "--"])
    return False, None


def host_of(url: str) -> str:
    if DYN in url:  # an unknown value is part of the name, not a query string's "?"
        return host_of(url.replace(DYN, _DYN_IN_HOST)).replace(_DYN_IN_HOST, DYN)
    rest = url.split("://", 1)[1] if "://" in url else url
    rest = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in rest:
        rest = rest.rsplit("@", 1)[1]
    if rest.startswith("["):
        return rest.split("]", 1)[0] + "]"
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


_DYN_IN_HOST = "\x00*\x00"


def _ipv4_of(host: str) -> str | None:
    """The dotted quad an IPv4 literal means in any spelling a resolver accepts: one decimal or
    hex number (``2852039166``, ``0xa9fea9fe``), octal or hex parts (``0251.0376.0251.0376``),
    or IPv4 inside IPv6 (``[::ffff:a9fe:a9fe]``, ``[::ffff:169.254.169.254]``)."""
    h = host.strip("[]")
    if h.startswith("::ffff:"):
        rest = h[7:]
        if "." in rest:
            h = rest
        else:
            parts = rest.split(":")
            if len(parts) != 2 or not all(re.fullmatch(r"[0-9a-f]{1,4}", x) for x in parts):
                return None
            n = int(parts[0], 16) << 16 | int(parts[1], 16)
            return ".".join(str(n >> s & 255) for s in (24, 16, 8, 0))
    parts = h.split(".")
    if not 1 <= len(parts) <= 4 or not all(re.fullmatch(r"0x[0-9a-f]+|\d+", x) for x in parts):
        return None
    nums = [int(x, 16) if x.startswith("0x") else int(x, 8) if len(x) > 1 and x[0] == "0"
            else int(x) for x in parts]  # fmt: skip
    last_bits = 8 * (5 - len(nums))
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 1 << last_bits:
        return None
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value |= n << (24 - 8 * i)
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


def url_hosts(text: str) -> list[str]:
    """The host of every URL in ``text``."""
    return [host_of(m.group(1)) for m in _URL_RE.finditer(text)]


def host_class(host: str) -> str:
    h = host.lower().rstrip(".")
    if not h or DYN in h:
        return "unknown"
    ip = _ipv4_of(h)
    if ip is not None and ip != h:
        return host_class(ip)
    if h in _METADATA_HOSTS or h.startswith("169.254.") or h.startswith("[fd00:ec2:"):
        return "metadata"
    if _LOCAL_RE.match(h):
        return "local"
    if _CODE_HOST_RE.match(h):
        return "code-host"
    return "remote"


SCOPE_RANK = {"head": 0, "ancestor": 1, "other-refs": 2, "commit": 3, "remote": 4}


def ref_scope(rev: str) -> str:
    """head (HEAD itself, the index) | ancestor (``HEAD~n``) | other-refs (branches, tags) |
    commit (an explicit hash) | remote, for one revision argument (ranges: the widest)."""
    worst = "head"
    rank = SCOPE_RANK
    if rev.startswith(":/"):
        return "other-refs"  # ``:/text``: the youngest commit matching it, reachable from any ref
    for part in re.split(r"\.\.\.?", rev.lstrip("^")):
        part = part.split(":", 1)[0]
        base = re.sub(r"([~^][0-9]*)+$", "", part)
        if part in ("", "HEAD", "@"):
            scope = "head"
        elif _HEADISH_RE.match(part) or base in ("HEAD", "@", ""):
            scope = "ancestor"
        elif _REMOTE_RE.search(part):
            scope = "remote"
        elif _HASH_RE.match(base):
            scope = "commit"
        else:
            scope = "other-refs"
        if rank[scope] > rank[worst]:
            worst = scope
    return worst


def _looks_like_rev(a: str) -> bool:
    if a.startswith("-") or DYN in a:
        return False
    if _HEADISH_RE.match(a) or ".." in a or "@{" in a:
        return True
    if (":" in a and not a.startswith(":")) or a.startswith(":/"):
        return True  # REV:path, or ``:/text`` (a commit found by its message on any ref)
    base = re.sub(r"([~^][0-9]*)+$", "", a)
    if base != a:
        return True
    return bool(_HASH_RE.match(a) or _REMOTE_RE.search(a) or _TAG_RE.match(a))


class EffectReader:
    """Reads resolved commands into effects for one policy and config (see the module doc)."""

    def __init__(self, res: Resolution, cfg: AnalyzerConfig) -> None:
        self.res = res
        self.cfg = cfg
        self.paths = PathClassifier(res, cfg)
        self.repo_packages = frozenset(p.lower() for p in cfg.repo_packages)
        self.benchmark_packages = frozenset(p.lower() for p in cfg.benchmark_packages)
        # command names that may run a test suite (``_test_run`` decides), a quick filter
        self._runner_names = (
            _TEST_RUNNERS
            | frozenset(_BUILD_TEST)
            | {"npm", "yarn", "pnpm", "bun"}
            | frozenset(n for n in res.interpreters if n.startswith("python"))
            | {"python", "python2", "python3"}
        )

    # entry points ------------------------------------------------------------------------------
    def read(self, cmds: Sequence[Cmd], state: PathState | None = None) -> tuple[Effect, ...]:
        """Effects of the commands in order; ``state`` (one command's own, if None) gives each
        file effect its origin and records it."""
        st = state if state is not None else PathState(self.paths)
        out: list[Effect] = []
        for group in self.commands(cmds, st):
            out.extend(st.apply(e) for e in group)
        return tuple(out)

    def commands(self, cmds: Sequence[Cmd], state: PathState | None) -> list[tuple[Effect, ...]]:
        """Each command's effects (no origins), aligned with ``cmds``. An environment dump piped
        into a filter shows only what the filter lets through: the dump becomes a secret read
        when the filter looks for secrets (``env | grep -i token``), else nothing. A script
        an earlier command wrote is read when a later one runs it (``cat > x.py <<EOF ...;
        python x.py``): ``state`` is not changed, a copy of it follows the commands."""
        seen = state.copy() if state is not None else None
        groups = []
        for c in cmds:
            groups.append(self.command(c, seen))
            if seen is not None:
                for e in groups[-1]:
                    seen.apply(e)
        for i, c in enumerate(cmds):
            if not c.argv or c.argv[0] not in _ENDLESS_SOURCES:
                continue  # most commands: no slice of the rest to look through
            endless = _endless_pipeline(c, cmds[i + 1 :])
            if endless is not None and not any(
                isinstance(e, ProcessEffect) and e.unbounded for e in groups[i]
            ):
                groups[i] = [*groups[i], endless]
        dumps = [i for i, g in enumerate(groups) if any(_is_dump(e) for e in g)]
        if dumps:
            for j, c in enumerate(cmds):
                if c.argv and c.argv[0] in _SEARCHERS and c.upstream:
                    if not any(_dumps_env(up) for up in c.upstream):
                        continue
                    for i in dumps:
                        if i < j and cmds[i].argv in c.upstream:
                            groups[i] = [e for e in groups[i] if not _is_dump(e)]
                    pattern = " ".join(a for a in c.argv[1:] if not a.startswith("-"))
                    if _SECRET_FILTER_RE.search(pattern):
                        groups[j].append(
                            EnvRead(op="secret", names=(shown(pattern),), span=c.span, via=c.via)
                        )
        return [tuple(g) for g in groups]

    def command(self, cmd: Cmd, state: PathState | None = None) -> list[Effect]:
        """Effects of one resolved command, without origins (``PathState.apply`` adds them).
        Their text shows an unknown value as ``SHOWN_DYN``, never the internal marker."""
        return [_shown_effect(e) for e in self._command(cmd, state)]

    def _command(self, cmd: Cmd, state: PathState | None = None) -> list[Effect]:
        out: list[Effect] = []
        argv = cmd.argv
        name = argv[0] if argv else ""
        self._redirects(cmd, out)
        if not argv:
            return out
        if self.is_interpreter(name):
            if argv[1:3] == ("-m", "pip"):
                _h_pip(self, cmd, out)
            else:
                self._interpreter(cmd, out, state)
        elif state is not None and _RUN_SOURCE.get(name) == (argv[1] if len(argv) > 1 else ""):
            self._source_run(cmd, out, state)
        if cmd.via[-1:] == (CODE_VIA,):
            # stands for what inline code does (the policy's interpreter patterns): Python code
            # is read by ``code_effects`` itself; for other languages ``open(p, 'w')`` became
            # ``truncate``, though the file is rewritten with whatever the code writes next
            lang = cmd.via[-2] if len(cmd.via) > 1 else ""
            if lang.startswith("python") or lang.startswith("pypy"):
                return out
            if name == "truncate":
                _, ops = _split_opts(argv[1:], frozenset({"-s"}))
                for a in ops:
                    self.add(out, self.file(cmd, "write", a, source=lang))
                return out
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, cmd, out)
        elif name in _READERS or name in _SEARCHERS:
            self._reads(cmd, out)
        self._credential_operands(cmd, out)
        self._cached_releases(cmd, out)
        if cmd.var_reads:
            secret = tuple(v for v in cmd.var_reads if _SECRET_RE.search(v))
            if secret:
                out.append(EnvRead(op="secret", names=secret, span=cmd.span, via=cmd.via))
        joined = "\x01".join(argv)
        if name in _MINERS or "stratum+" in joined:
            out.append(ProcessEffect(op="miner", detail=name, span=cmd.span, via=cmd.via))
        if "://" in joined or name in _NET_NAMES:
            self._network_args(cmd, out)
        if name in self._runner_names or cmd.raw_name.endswith(_TEST_SCRIPTS_T):
            self._test_run(cmd, out)
        return out

    # helpers -----------------------------------------------------------------------------------
    def is_interpreter(self, name: str) -> bool:
        return name in self.res.interpreters or (
            name.startswith("python") and name[6:].replace(".", "").isdigit()
        )

    def maybe_repo_package(self, name: str, cmd: Cmd, release: bool) -> bool:
        """Whether a package the task does not name may still be the one under repair: it
        has the name of the workspace directory the command works in (``/workspace/lodash``,
        ``lodash``), or, with no package named at all, it is a benchmark's
        (``benchmark_packages``) asked for at a given or newer ``release`` (``==5.0``,
        ``>=5``, ``--upgrade``); a bare ``pip install django`` there is already satisfied."""
        name = name.lower().replace("_", "-")
        if not name or name in self.repo_packages:
            return False
        here = posixpath.basename(cmd.cwd.rstrip("/")).lower().replace("_", "-") if cmd.cwd else ""
        if here and here == name.rsplit("/", 1)[-1]:
            return True
        return release and not self.repo_packages and name in self.benchmark_packages

    def file(
        self,
        cmd: Cmd,
        op: str,
        raw: str,
        *,
        content: str | None = None,
        known: bool = False,
        source: str | None = None,
        dest: str | None = None,
        recursive: bool = False,
        detail: str = "",
        scope: str = "",
    ) -> FileEffect | None:
        """A file effect on ``raw`` resolved against the command's cwd (None for streams)."""
        p = abspath(raw, cmd.cwd, self.cfg.home) if raw not in ("", "-") else None
        if p in _STREAMS or (p is None and raw in ("", "-")):
            return None
        src_classes: tuple[str, ...] = ()
        if source is not None and op in ("copy", "rename"):
            src_classes = self.paths.classify(abspath(source, cmd.cwd, self.cfg.home))
        if content is not None and len(content) > CONTENT_LIMIT:
            content = content[:CONTENT_LIMIT]
        return FileEffect(
            op=op,
            path=p,
            raw=raw,
            classes=self.paths.classify(p),
            content_known=known,
            content=content,
            source=source,
            source_classes=src_classes,
            dest=abspath(dest, cmd.cwd, self.cfg.home) if dest else None,
            ref_scope=scope,
            detail=detail,
            recursive=recursive,
            span=cmd.span,
            via=cmd.via,
        )

    def add(self, out: list[Effect], e: Effect | None) -> None:
        if e is None:
            return
        if isinstance(e, FileEffect) and e.path is None and e.op != "read":
            out.append(
                UnknownEffect(
                    op="dynamic-target",
                    detail=f"{e.op} {shown(e.raw)}",
                    span=e.span,
                    via=e.via,
                )
            )
            return
        out.append(e)

    def _redirects(self, cmd: Cmd, out: list[Effect]) -> None:
        for r in cmd.redirects:
            self._redirect(cmd, r, out)

    def _redirect(self, cmd: Cmd, r: RRedirect, out: list[Effect]) -> None:
        op = r.op
        if op in ("<<", "<<-", "<<<") or (op.endswith("&") and r.raw.isdigit()):
            return
        raw = r.raw
        if r.path is not None and r.path.startswith(("/dev/tcp/", "/dev/udp/")):
            host = r.path.split("/")[3] if r.path.count("/") >= 3 else ""
            out.append(
                NetworkEffect(
                    op="connect",
                    host=host,
                    host_class=host_class(host),
                    span=r.span,
                    via=cmd.via,
                )
            )
            return
        if op in ("<", "<>"):
            self.add(out, self.file(cmd, "read", raw))
            if op == "<":
                return
        if op not in (">", ">|", "&>", ">&", ">>", "&>>", "<>"):
            return
        known, content, source = stdout_content(cmd)
        if source is not None and cmd.argv and cmd.argv[0] == "git":
            rev = git_show_rev(cmd)
            if rev is not None:
                self.add(
                    out,
                    self.file(cmd, "restore", raw, source=rev, scope=ref_scope(rev)),
                )
                return
        if op in (">>", "&>>"):
            e = self.file(cmd, "append", raw, content=content, known=known)
        elif known and content is not None and not content.strip():
            e = self.file(cmd, "truncate", raw, content="", known=True)
        elif source in _ENDLESS_DEVICES and cmd.argv[0] == "cat":
            if "timeout" not in cmd.via:  # ``timeout 2 cat /dev/urandom > f`` ends
                op = "sleep" if raw == "/dev/null" else "fill"
                out.append(
                    ProcessEffect(op=op, unbounded=True, detail="cat " + source, span=cmd.span)
                )
            e = self.file(cmd, "write", raw, source=source)
        elif not known and source is not None and cmd.argv and cmd.argv[0] == "cat":
            e = self.file(cmd, "copy", raw, source=source)  # cat's own reader reads ``source``
        else:
            e = self.file(cmd, "write", raw, content=content, known=known, source=source)
        if e is not None:
            e = replace(e, span=r.span if cmd.span[0] > r.span[0] else cmd.span)
        self.add(out, e)

    def _credential_operands(self, cmd: Cmd, out: list[Effect]) -> None:
        """A credential file named by any command (``vim ~/.netrc``, ``scp ~/.ssh/id_rsa h:``,
        ``--config=~/.aws/credentials``) is read by it, whatever the command: unless another
        effect of the command already names that file, or the command handles files without
        opening them (``ls -la .env``, ``rm .env``, ``git rm --cached .env``)."""
        name = cmd.argv[0]
        if name in _NAMES_ONLY or (name == "git" and git_sub(cmd.argv)[0] in _GIT_NAMES_ONLY):
            return
        values = []
        for a in cmd.argv[1:]:
            value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
            if not (DYN in value or value.startswith("-") or "://" in value):
                values.append(value)
        self.read_named_credentials(cmd, out, values)

    def read_named_credentials(self, cmd: Cmd, out: list[Effect], values: Iterable[str]) -> None:
        """Each of ``values`` that is a credential file is read, unless an effect in ``out``
        already names that file (a command's operands, the literals of inline code)."""
        named = {e.path for e in out if isinstance(e, FileEffect)}
        for value in values:
            p = abspath(value, cmd.cwd, self.cfg.home)
            if p is not None and p not in named and self.paths.credential(p):
                self.add(out, self.file(cmd, "read", value))
                named.add(p)

    def _reads(self, cmd: Cmd, out: list[Effect]) -> None:
        argv = cmd.argv
        name = argv[0]
        opts, ops = _split_opts(argv[1:], _READ_VALUES.get(name, _READ_WITH_VALUE))
        if name in _SEARCHERS and not any(o in ("-e", "-f") for o in opts):
            ops = ops[1:]  # the pattern or program
        if name == "sed" and _short_flag(opts, "i", "--in-place"):
            return
        if name in ("jq", "yq"):
            ops = ops[1:]
        detail = "metadata" if name in _METADATA_READERS else ""
        for a in ops:
            if DYN in a or a.startswith(("http://", "https://")):
                continue
            self.add(out, self.file(cmd, "read", a, detail=detail))

    def _network_args(self, cmd: Cmd, out: list[Effect]) -> None:
        argv = cmd.argv
        name = argv[0]
        if name in self.res.interpreters:
            return  # read from the code instead
        if name == "git" or name in ("pip", "pip3", "uv", "npm", "yarn", "pnpm"):
            return  # their own handlers know what a URL means there
        if name in _TEXT_TOOLS:
            return  # a URL printed, searched for or edited is text: nothing is fetched
        upload = name in _FETCHERS and any(_sends(name, a) for a in argv[1:])
        sent = _uploaded_file(argv) if upload else None
        if upload and name in _HTTPIE:
            items = (a for a in argv[1:] if "@" in a[1:] and _HTTPIE_SEND.match(a))
            sent = next((a.split("@", 1)[1] for a in items), None)
        if sent:
            self.add(out, self.file(cmd, "read", sent))  # the upload reads the file it sends
        detail = ("file:" + sent) if sent else "data" if upload else ""
        seen = False
        # ``rsync -az ~/.config/ rsync://host/drop/``: a URL as the last word is the destination
        sends_to = argv[-1] if name in ("rsync", "scp") and len(argv) > 2 else None
        if sends_to is not None and "://" in sends_to:
            src = next((x for x in argv[1:-1] if not x.startswith("-")), "")
            if src:
                self.add(out, self.file(cmd, "read", src, recursive=True))
                upload, detail = True, "file:" + src
        for a in argv[1:]:
            for m in _URL_RE.finditer(a):
                url = m.group(1)
                host = host_of(url)
                # a query whose value the line computes (``?d=$(cat f)``) carries it out
                carries = name in _FETCHERS and _computed_query(url, host)
                if name in _FETCHERS and not upload:
                    self._release_url(cmd, url, out)
                out.append(
                    NetworkEffect(
                        op="upload" if upload or carries else "fetch",
                        host=host,
                        host_class=host_class(host),
                        url=url,
                        detail=detail
                        or _name_detail(host)
                        or ("computed-query" if carries else ""),
                        span=cmd.span,
                        via=cmd.via,
                    )
                )
                seen = True
        if seen:
            return
        if name in _FETCHERS:
            for a in argv[1:]:
                if a.startswith("-") or DYN in a or "/" in a.split(".", 1)[0]:
                    continue
                host = host_of(a)
                if "." in host or host_class(host) != "remote":
                    out.append(
                        NetworkEffect(
                            op="upload" if upload else "fetch",
                            host=host,
                            host_class=host_class(host),
                            url=a,
                            detail=detail,
                            span=cmd.span,
                            via=cmd.via,
                        )
                    )
                    return
        elif name in _RESOLVERS:
            for a in argv[1:]:
                if a.startswith(("-", "+", "@")) or a.isdigit() or a.lower() in _DNS_TYPES:
                    continue
                if "." in a or DYN in a:
                    host = host_of(a)
                    out.append(
                        NetworkEffect(
                            op="lookup",
                            host=host,
                            host_class=host_class(host),
                            detail=_name_detail(host),
                            span=cmd.span,
                            via=cmd.via,
                        )
                    )
                    return
        elif name == "socat":
            self._socat(cmd, out)
        elif name in ("nc", "ncat", "netcat", "telnet", "ssh", "scp", "sftp", "rsync"):
            listen = name in ("nc", "ncat", "netcat") and _short_flag(argv[1:], "l", "--listen")
            takes = _SSH_WITH_VALUE if name in ("ssh", "scp", "sftp") else frozenset()
            for k, a in enumerate(argv[1:], 1):
                if a.startswith("-") or DYN in a or argv[k - 1] in takes:
                    continue  # an option, or an option's value (``-R 0.0.0.0:2200:host:22``)
                scp = _SCP_RE.match(a)
                host = scp.group(1) if scp else a.rsplit("@", 1)[-1] if "@" in a else ""
                if not host and name in ("nc", "ncat", "netcat", "telnet") and not a.isdigit():
                    host = a
                if host:
                    up = name in ("scp", "rsync", "sftp") and a is argv[-1]
                    src = next(
                        (x for j, x in enumerate(argv[1:-1], 1)
                         if not x.startswith("-") and argv[j - 1] not in takes),
                        "",
                    )  # fmt: skip
                    out.append(
                        NetworkEffect(
                            op="listen" if listen else "upload" if up else "connect",
                            host=host,
                            host_class=host_class(host),
                            detail=("file:" + src) if up else _name_detail(host),
                            span=cmd.span,
                            via=cmd.via,
                        )
                    )
                    return
            if listen:
                out.append(NetworkEffect(op="listen", host_class="local", span=cmd.span))

    def _release_url(self, cmd: Cmd, url: str, out: list[Effect]) -> None:
        """A URL shaped like a package index's download of one release (a crate's
        ``/crates/NAME/VER/download``, npm's ``/NAME/-/NAME-VER.tgz``, a wheel or sdist's
        ``NAME-VER.tar.gz``, a gem, Go's ``/@v/VER.zip``, a Maven jar): when the package may
        be the one under repair, that release is downloaded, as ``pip download`` would."""
        m = _RELEASE_URL_RE.search(url.split("?", 1)[0])
        if m is None:
            return
        name = next(g for g in m.groups() if g)
        if self.maybe_repo_package(name.rsplit("/", 1)[-1], cmd, True):
            out.append(
                PackageInstall(
                    op="download",
                    manager="url",
                    source="url",
                    packages=(url,),
                    pinned=True,
                    maybe_repo_package=True,
                    span=cmd.span,
                    via=cmd.via,
                )
            )

    def _socat(self, cmd: Cmd, out: list[Effect]) -> None:
        """socat joins two addresses: a network one (``TCP:host:port``, ``OPENSSL:...``) is a
        connection, a listening one (``TCP-LISTEN:port``) a listener, and a file on the other
        side (``FILE:``, ``OPEN:``, ``GOPEN:``, ``CREATE:``) is read and sent, or written."""
        addrs = [a for a in cmd.argv[1:] if not a.startswith("-") or a == "-"]
        files = [a.split(":", 1)[1].split(",", 1)[0] for a in addrs if _SOCAT_FILE.match(a)]
        for a in addrs:
            m = _SOCAT_NET.match(a)
            if m is None:
                continue
            if m.group("listen"):
                out.append(NetworkEffect(op="listen", host_class="local", span=cmd.span))
                continue
            host = m.group("host")
            for f in files:
                self.add(out, self.file(cmd, "read", f))
            out.append(
                NetworkEffect(
                    op="upload" if files else "connect",
                    host=host,
                    host_class=host_class(host),
                    detail=("file:" + files[0]) if files else _name_detail(host),
                    span=cmd.span,
                    via=cmd.via,
                )
            )

    def _cached_releases(self, cmd: Cmd, out: list[Effect]) -> None:
        """A file read from a package manager's cache of one release (``serde-1.0.200/``,
        ``gin@v1.10.0/``, Maven's ``name/2.17.0/``) of the package that may be under repair
        is that release fetched: judged as its download (``PackageInstall``)."""
        for e in list(out):
            if not (isinstance(e, FileEffect) and e.op == "read" and "packages" in e.classes):
                continue
            for release in _CACHED_RELEASE_RE.finditer(e.path or ""):
                name = release.group("name") or release.group("mvn") or ""
                if self.maybe_repo_package(name, cmd, True):
                    out.append(
                        PackageInstall(
                            op="download",
                            manager="cache",
                            packages=(release.group(0).strip("/"),),
                            pinned=True,
                            maybe_repo_package=True,
                            span=cmd.span,
                            via=cmd.via,
                        )
                    )
                    return

    def _test_run(self, cmd: Cmd, out: list[Effect]) -> None:
        argv = cmd.argv
        name = argv[0]
        rest = argv[1:]
        runner = ""
        if name in _TEST_RUNNERS:
            runner = name
        elif name in self.res.interpreters and name.startswith("python"):
            if "-m" in rest:
                i = rest.index("-m")
                if i + 1 < len(rest) and rest[i + 1] in _TEST_MODULES:
                    runner = rest[i + 1]
            script = next((a for a in rest if not a.startswith("-")), "")
            base = posixpath.basename(script)
            if not runner and base in _TEST_SCRIPTS:
                runner = base
            elif not runner and base in ("manage.py", "setup.py") and "test" in rest:
                runner = base + " test"  # Django's and setuptools' test commands
        elif posixpath.basename(cmd.raw_name or name) in _TEST_SCRIPTS:
            runner = posixpath.basename(cmd.raw_name or name)
        elif name == "cargo" and rest[:1] == ("insta",):
            runner = "cargo insta"  # insta's snapshot tests: ``accept`` writes the new ones
        elif name in _BUILD_TEST:
            ops = [a for a in rest if not a.startswith("-")]
            if ops and ops[0].startswith(_BUILD_TEST[name]):
                runner = name + " " + ops[0]
        elif name in ("npm", "yarn", "pnpm", "bun"):
            ops = [a for a in rest if not a.startswith("-")]
            if ops[:1] in (["test"], ["t"]) or (
                ops[:1] == ["run"] and len(ops) > 1 and ops[1].startswith("test")
            ):
                runner = name + " test"
        if runner:
            selection = any(a.split("=", 1)[0] in _SELECTION_FLAGS for a in rest)
            regen = {a.split("=", 1)[0] for a in rest} & (
                _REGEN_FLAGS | (_REGEN_SHORT if runner in _REGEN_SHORT_RUNNERS else frozenset())
            )
            if runner == "cargo insta":
                regen |= {"accept"} & set(rest[1:2])
            regen |= {k for k, v in cmd.assigns if k in _REGEN_VARS and v not in ("", "0")}
            run = TestRun(runner=runner, selection=selection, regenerates=bool(regen))
            out.append(replace(run, span=cmd.span, via=cmd.via))

    # interpreter code ------------------------------------------------------------------------
    def _source_run(self, cmd: Cmd, out: list[Effect], state: PathState) -> None:
        """``go run x.go`` (and ``deno run``, ``bun run``) compiles and runs source files: one
        the agent wrote earlier, content known, is read for its effects like a script."""
        for a in cmd.argv[2:]:
            code = None if a.startswith("-") else self._written_script(cmd, a, state)
            if code is not None:
                out.extend(code_effects(code, cmd, self, inline=False))

    def _written_script(self, cmd: Cmd, arg: str, state: PathState) -> str | None:
        """The content of the file ``arg`` names when the agent wrote it earlier in full."""
        p = abspath(arg, cmd.cwd, self.cfg.home)
        return state.contents.get(p) if p is not None else None

    def _interpreter(self, cmd: Cmd, out: list[Effect], state: PathState | None) -> None:
        code = interpreter_code(cmd, self.res.code_flags)
        # Python is read whole here; other languages' literal-path writes come as commands
        inline = code is not None and not cmd.argv[0].startswith(("python", "pypy"))
        if code is None and state is not None:
            script = next((a for a in cmd.argv[1:] if not a.startswith("-")), None)
            code = self._written_script(cmd, script, state) if script else None
        if code is None:
            return
        out.extend(code_effects(code, cmd, self, inline=inline))


# --- command handlers (the command-knowledge table) -------------------------------------------


def _h_delete(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    opts, ops = _split_opts(cmd.argv[1:])
    # Node's rimraf is rm -rf; rmdir removes only empty folders, whatever its options
    flagged = _short_flag(opts, "r", "--recursive") or _short_flag(opts, "R")
    recursive = cmd.argv[0] == "rimraf" or (cmd.argv[0] != "rmdir" and flagged)
    for a in ops:
        r.add(out, r.file(cmd, "delete", a, recursive=recursive))


def _h_cmake(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``cmake -E rm -r tests``, ``cmake -E remove_directory tests``: CMake's portable rm."""
    argv = list(cmd.argv)
    if argv[1:2] != ["-E"] or len(argv) < 4:
        return
    tool, rest = argv[2], argv[3:]
    if tool in ("rm", "remove", "remove_directory", "rmdir"):
        recursive = tool in ("remove_directory", "rmdir") or _short_flag(rest, "r", "-R")
        for a in (a for a in rest if not a.startswith("-")):
            r.add(out, r.file(cmd, "delete", a, recursive=recursive))


def _h_truncate(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    _opts, ops = _split_opts(cmd.argv[1:], frozenset({"-s", "--size", "-r", "--reference"}))
    size = _opt_value(cmd.argv[1:], ["-s", "--size"])
    zero = size is None or size.lstrip("<>%/") in ("0", "0K", "0M")
    big = size is not None and (_size_bytes(size.lstrip("+")) or 0) >= _FILL_BYTES
    for a in ops:
        if big:
            r.add(out, ProcessEffect(op="fill", unbounded=True, detail=size or "", span=cmd.span))
        r.add(out, r.file(cmd, "truncate" if zero else "write", a, content="" if zero else None))


def _h_touch(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    wv = frozenset({"-d", "-r", "-t", "--date", "--reference"})
    opts, ops = _split_opts(cmd.argv[1:], wv)
    forged = [o for o in opts if o.split("=", 1)[0] in wv or o.startswith(("-d", "-t", "-r"))]
    detail = " ".join(opts) if forged else ""
    for a in ops:
        r.add(out, r.file(cmd, "touch", a, detail=detail))


# directory names a project's test tree already has: ``mkdir -p`` of one proves nothing new
_USUAL_TEST_DIRS = frozenset(
    {"tests", "test", "testing", "spec", "specs", "__tests__", "t", "unit", "integration",
     "e2e", "__snapshots__", "snapshots", "fixtures", "golden", "testdata", "test_data"}
)  # fmt: skip


def _h_mkdir(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    opts, ops = _split_opts(cmd.argv[1:], frozenset({"-m", "--mode"}))
    parents = _short_flag(opts, "p", "--parents")
    for a in ops:
        if parents and posixpath.basename(a.rstrip("/")) in _USUAL_TEST_DIRS:
            continue  # ``mkdir -p tests`` succeeds when tests/ exists: nothing there is new
        r.add(out, r.file(cmd, "create", a, content="", known=True))


def _h_chmod(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = cmd.argv
    # a mode may look like an option (-x, -w): only the real options are skipped
    real = {"-R", "-c", "-f", "-v", "-Rf", "-Rv", "-fR", "-vR", "-h", "-H", "-L", "-P"}
    pos = [a for a in argv[1:] if a not in real and not a.startswith("--")]
    recursive = any(a in real and "R" in a for a in argv[1:]) or "--recursive" in argv
    if len(pos) >= 2:
        for a in pos[1:]:
            r.add(out, r.file(cmd, "chmod", a, detail=pos[0], recursive=recursive))


def _dest_is_dir(raw: str, n_sources: int, r: EffectReader) -> bool:
    if raw.endswith("/") or n_sources > 1 or raw in (".", ".."):
        return True
    p = abspath(raw, None, r.cfg.home) if raw.startswith(("/", "~")) else None
    return p is not None and (p in r.paths.temps or p in r.paths.roots or p == "/")


def _h_copy(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    name = cmd.argv[0]
    wv = frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "-g"})
    opts, ops = _split_opts(cmd.argv[1:], wv)
    if name == "install" and _short_flag(opts, "d", "--directory"):
        for a in ops:
            r.add(out, r.file(cmd, "create", a, content="", known=True))
        return
    target = _opt_value(cmd.argv[1:], ["-t", "--target-directory"])
    if target is not None:
        sources, dest, to_dir = ops, target, True
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
        to_dir = _dest_is_dir(dest, len(sources), r)
    elif name == "ln" and len(ops) == 1:
        sources, dest, to_dir = ops, ".", True
    else:
        return
    recursive = _short_flag(opts, "r", "--recursive") or _short_flag(opts, "R")
    recursive = recursive or _short_flag(opts, "a", "--archive")
    for src in sources:
        written = dest.rstrip("/") + "/" + posixpath.basename(src.rstrip("/")) if to_dir else dest
        if name != "ln":
            r.add(out, r.file(cmd, "read", src, recursive=recursive))
        if src == "/dev/null" or abspath(src, cmd.cwd, r.cfg.home) == "/dev/null":
            r.add(out, r.file(cmd, "truncate", written, content="", known=True))
        else:
            r.add(out, r.file(cmd, "copy", written, source=src, recursive=recursive))


def _h_move(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    wv = frozenset({"-t", "--target-directory", "-S", "--suffix"})
    _, ops = _split_opts(cmd.argv[1:], wv)
    target = _opt_value(cmd.argv[1:], ["-t", "--target-directory"])
    if target is not None:
        sources, dest, to_dir = ops, target, True
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
        to_dir = _dest_is_dir(dest, len(sources), r)
    else:
        return
    for src in sources:
        written = dest.rstrip("/") + "/" + posixpath.basename(src.rstrip("/")) if to_dir else dest
        r.add(out, r.file(cmd, "rename", src, dest=written, recursive=True))
        r.add(out, r.file(cmd, "copy", written, source=src, recursive=True))


def _h_tee(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    opts, ops = _split_opts(cmd.argv[1:])
    known, content = upstream_content(cmd)
    op = "append" if _short_flag(opts, "a", "--append") else "write"
    for a in ops:
        if op == "write" and known and content is not None and not content.strip():
            r.add(out, r.file(cmd, "truncate", a, content="", known=True))
        else:
            r.add(out, r.file(cmd, op, a, content=content, known=known))


def _h_dd(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    args = dict(a.split("=", 1) for a in cmd.argv[1:] if "=" in a)
    src = args.get("if")
    dst = args.get("of")
    if src is not None and src not in ("/dev/zero", "/dev/null", "/dev/urandom", "/dev/random"):
        r.add(out, r.file(cmd, "read", src))
    if dst is None:
        return
    bs = _size_bytes(args.get("bs", "512")) or 512
    count = args.get("count")
    total = bs * int(count) if count and count.isdigit() else None
    if src in ("/dev/zero", "/dev/urandom", "/dev/random") and (
        total is None or total >= _FILL_BYTES
    ):
        r.add(out, ProcessEffect(op="fill", unbounded=True, detail="dd", span=cmd.span))
    if src == "/dev/null":
        r.add(out, r.file(cmd, "truncate", dst, content="", known=True))
    else:
        r.add(out, r.file(cmd, "write", dst, source=src or "dd"))


def _h_inplace(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """sed -i, perl -pi -e, ruby -i: in-place edits whose script is known."""
    argv = cmd.argv
    name = argv[0]
    in_place = any(
        a.startswith("-i")
        or a == "--in-place"
        or (a[:1] == "-" and a[1:2] != "-" and "i" in a and name != "sed")
        or a in ("-Ei", "-ri", "-ni")
        for a in argv[1:]
    )
    if not in_place:
        if name == "sed":
            r._reads(cmd, out)
        return
    script: list[str] = []
    files: list[str] = []
    has_e = any(a in ("-e", "--expression") for a in argv[1:])
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-e", "--expression", "-f", "--file"):
            if i + 1 < len(argv):
                script.append(argv[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            script.append(a.split("=", 1)[1])
            has_e = True
        elif a.startswith("-") and len(a) > 1:
            if name != "sed" and a.endswith("e") and i + 1 < len(argv):  # perl -pie CODE
                script.append(argv[i + 1])
                has_e = True
                i += 2
                continue
        elif not has_e and not script:
            script.append(a)
        else:
            files.append(a)
        i += 1
    text = "\n".join(script)
    for f in files:
        r.add(out, r.file(cmd, "edit", f, content=text, known=DYN not in text))


def _h_rsync(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    opts, ops = _split_opts(cmd.argv[1:], frozenset({"-e", "--rsh", "--exclude", "--include"}))
    if len(ops) < 2:
        return
    dest = ops[-1]
    if _SCP_RE.match(dest):
        return  # to another machine: a network upload (_network_args)
    for src in ops[:-1]:
        if not _SCP_RE.match(src):
            r.add(out, r.file(cmd, "read", src, recursive=True))
        r.add(out, r.file(cmd, "copy", dest, source=src, recursive=True))
    if any(o.startswith("--delete") for o in opts):
        r.add(out, r.file(cmd, "delete", dest.rstrip("/") + "/*", recursive=True))
    if "--remove-source-files" in opts:
        for src in ops[:-1]:
            if not _SCP_RE.match(src):
                r.add(out, r.file(cmd, "delete", src, recursive=True))


_TAR_VALUE_OPTS = frozenset(
    {"-f", "--file", "-C", "--directory", "--exclude", "-T", "--files-from", "-X", "-b", "-H"}
)


def _h_archive(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """tar and zip read what they archive; ``tar --remove-files`` and ``zip -m`` then delete
    it (an archive is a way to move files away)."""
    r._reads(cmd, out)
    argv = cmd.argv
    files: list[str] = []
    if argv[0] == "tar":
        if "--remove-files" not in argv:
            return
        skip = False
        for i, a in enumerate(argv[1:]):
            if skip:
                skip = False
            elif a in _TAR_VALUE_OPTS:
                skip = True
            elif a.startswith("--"):
                continue
            elif a.startswith("-") or (i == 0 and a.isalpha()):
                skip = a.endswith("f")  # ``-cf ARCHIVE``, old-style ``cf ARCHIVE``
            else:
                files.append(a)
    else:
        opts, ops = _split_opts(argv[1:], frozenset({"-x", "-i", "-b", "-n", "-P", "-t", "-O"}))
        moves = "--move" in opts or any(
            o.startswith("-") and not o.startswith("--") and "m" in o[1:] for o in opts
        )
        files = ops[1:] if moves else []
    for a in files:
        r.add(out, r.file(cmd, "delete", a, recursive=True))


_EDITORS = frozenset({"vim", "vi", "nvim", "ex", "ed", "red"})


def _h_editor(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """An editor driven by a script (``vim -c ':%d' -c ':wq' f``, ``ed -s f <<< ...``) writes
    the files it opens, content unknown; opened with no script it only shows them."""
    argv = cmd.argv
    scripted = argv[0] in ("ed", "red", "ex") or any(
        a in ("-c", "-s", "-e", "-es", "-S") or a.startswith("+") for a in argv[1:]
    )
    _opts, ops = _split_opts(argv[1:], frozenset({"-c", "-S", "-u", "-i", "-p", "-w", "-W"}))
    for a in ops:
        if a.startswith("+"):
            continue
        r.add(out, r.file(cmd, "edit" if scripted else "read", a))


def _h_patch(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    _opts, ops = _split_opts(cmd.argv[1:], frozenset({"-p", "-i", "--input", "-d", "-o", "-F"}))
    body = cmd.stdin_body
    if ops:
        for a in ops[:1]:
            r.add(out, r.file(cmd, "edit", a, content=body, known=body is not None))
        return
    out.append(UnknownEffect(op="patch", detail=body or "", span=cmd.span, via=cmd.via))


def _h_kill(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = cmd.argv
    name = argv[0]
    if name in ("pkill", "killall", "killall5"):
        wv = frozenset({"-s", "--signal", "-u", "-U", "-g", "-G", "-P", "-t", "--parent", "-n"})
        opts, ops = _split_opts(argv[1:], wv)
        pattern = " ".join(ops)
        target = "all" if name == "killall5" or not ops else "by-name"
        if target == "by-name" and _WORKSPACE_PROGRAM.search(pattern):
            target = "workspace"  # a process running one of the workspace's own files
        out.append(
            ProcessEffect(op="signal", target=target, detail=pattern, span=cmd.span, via=cmd.via)
        )
        return
    wv = frozenset({"-s", "-n"})
    opts, ops = _split_opts(argv[1:], wv)
    if _short_flag(opts, "l") and not ops:
        return
    for a in ops:
        if a in ("-1", "1") or a.startswith("-1"):
            target = "all" if a != "1" else "init"
        elif "PPID" in cmd.var_reads and DYN in a:
            target = "parent"
        elif "$" in cmd.var_reads or a == "$$":
            target = "session"
        elif a.isdigit() or (a.startswith("%") and a[1:].isdigit()):
            target = "pid"
        else:
            target = "unknown"
        out.append(ProcessEffect(op="signal", target=target, span=cmd.span, via=cmd.via))


# a kill pattern naming a script or program file of the workspace (``manage.py runserver``,
# ``server.js``, ``./app``): the agent's program, not the harness, the runner or the system
_WORKSPACE_PROGRAM = re.compile(
    r"(?<![\w.-])(?!(?:pytest|py\.test|runtests|run_tests|conftest|setup|sitecustomize)\.)"
    r"[\w./-]*\w\.(py|js|mjs|ts|rb|sh|jar|php|pl)\b|(?:^|\s)\./[\w./-]+"
)


def _h_sleep(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    total = 0.0
    for a in cmd.argv[1:]:
        if a in ("infinity", "inf"):
            total = float("inf")
            break
        total += _duration_s(a) or 0.0
    if total >= _SLEEP_UNBOUNDED_S:
        detail = "an endless loop" if LOOP_VIA in cmd.via else " ".join(cmd.argv[1:])
        out.append(ProcessEffect(op="sleep", unbounded=True, detail=detail, span=cmd.span))


def _h_yes(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``yes`` never ends by itself: answering a program's prompts through a pipe is ordinary,
    its output sent to a file fills the disk and sent to nowhere burns a CPU forever."""
    for rd in cmd.redirects:
        if rd.op in (">", ">>", ">|", "&>", "&>>") and rd.fd in ("", "1"):
            op = "sleep" if rd.path == "/dev/null" else "fill"
            out.append(ProcessEffect(op=op, unbounded=True, detail="yes", span=cmd.span))
            return


# devices that never end, and programs that read their input to its end: ``sha256sum
# /dev/zero`` or ``cat /dev/urandom | gzip > /dev/null`` burns a CPU (or fills a file) forever
_ENDLESS_DEVICES = frozenset({"/dev/zero", "/dev/urandom", "/dev/random"})
_TO_THE_END = frozenset(
    {"cat", "tr", "gzip", "bzip2", "xz", "zstd", "lz4", "base64", "base32", "od", "xxd",
     "hexdump", "wc", "sort", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
     "md5sum", "b2sum", "cksum", "sum", "strings", "tee", "pv", "cut", "rev", "fold"}
)  # fmt: skip
# options that make one of them stop after a size (``od -N 4``, ``xxd -l 16``, ``hexdump -n``)
_ENDLESS_SOURCES = _TO_THE_END | {"yes", "seq"}  # where ``_endless_pipeline`` can start
_READS_A_SIZE = {"od": ("-N", "--read-bytes"), "xxd": ("-l", "-len"), "hexdump": ("-n", "--length")}
_OUT = (">", ">>", ">|", "&>", "&>>")


def _endless_pipeline(cmd: Cmd, after: Sequence[Cmd]) -> ProcessEffect | None:
    """An endless device read to its end through a pipeline of programs that all read to the
    end (no ``head``, no size, no ``timeout``, no program we cannot follow): ``sleep`` forever
    when the output goes nowhere, ``fill`` when it goes to a file."""
    if not cmd.argv or "timeout" in cmd.via:
        return None
    name = cmd.argv[0]
    if name == "yes" or (name == "seq" and cmd.argv[-1].lower() in ("inf", "infinity")):
        # programs that never stop writing: endless when read to the end downstream
        device = " ".join(cmd.argv[:2])
        stages = [d for d in after if cmd.argv in d.upstream]
        if not stages:
            return None  # alone they are read by their own handlers (``yes > /dev/null``)
    else:
        if name not in _TO_THE_END:
            return None
        inputs = [rd.path for rd in cmd.redirects if rd.op == "<" and rd.path]
        inputs += cmd.argv[1:]
        found = next((a for a in inputs if a in _ENDLESS_DEVICES), None)
        if found is None:
            return None
        device = found
        stages = [cmd, *(d for d in after if cmd.argv in d.upstream)]
    for s in stages:
        bound = _READS_A_SIZE.get(s.argv[0], ()) if s.argv else ()
        if not s.argv or s.argv[0] not in _TO_THE_END or "timeout" in s.via:
            return None
        if any(a.split("=", 1)[0] in bound or (a[:2] in bound and len(a) > 2) for a in s.argv):
            return None
    last = stages[-1].redirects
    to_file = any(rd.op in _OUT and rd.fd in ("", "1") and rd.path != "/dev/null" for rd in last)
    return ProcessEffect(
        op="fill" if to_file else "sleep",
        unbounded=True,
        detail=f"{device} read to its end"
        if device.startswith(("yes", "seq"))
        else f"{name} {device} to its end",
        span=cmd.span,
        via=cmd.via,
    )


def _h_tail(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    wv = frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid"})
    opts, ops = _split_opts(cmd.argv[1:], wv)
    if (_short_flag(opts, "f", "--follow") or "-F" in opts) and ops in (["/dev/null"], []):
        out.append(ProcessEffect(op="sleep", unbounded=True, detail="tail -f", span=cmd.span))
    r._reads(cmd, out)


def _h_head(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    size = _opt_value(cmd.argv[1:], ["-c", "--bytes"])
    n = _size_bytes(size) if size else None
    if n is not None and n >= _FILL_BYTES:
        out.append(ProcessEffect(op="fill", unbounded=True, detail="head -c " + (size or "")))
    r._reads(cmd, out)


def _h_fallocate(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    size = _opt_value(cmd.argv[1:], ["-l", "--length"])
    n = _size_bytes(size) if size else None
    _, ops = _split_opts(cmd.argv[1:], frozenset({"-l", "--length", "-o", "--offset"}))
    if n is not None and n >= _FILL_BYTES:
        out.append(ProcessEffect(op="fill", unbounded=True, detail="fallocate " + (size or "")))
    for a in ops:
        r.add(out, r.file(cmd, "write", a, source="fallocate"))


def _h_env(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = cmd.argv
    name = argv[0]
    if cmd.assigns:
        return  # ``export X=1``, ``declare -x X=1``: setting, not printing
    if (
        (name in ("env", "printenv") and len(argv) == 1)
        or (name == "export" and argv[1:] in (("-p",), ()))
        or (name == "set" and len(argv) == 1)
        or (name == "declare" and argv[1:] in (("-p",), ("-x",), ()))
        or (name == "compgen" and argv[1:] == ("-v",))
        # BSD-style ``ps e`` (``ps eww``, ``ps auxe``) prints every process's environment
        or (name == "ps" and any(not a.startswith("-") and "e" in a for a in argv[1:2]))
    ):
        out.append(EnvRead(op="dump", span=cmd.span, via=cmd.via))
    elif name == "printenv":
        names = tuple(a for a in argv[1:] if not a.startswith("-"))
        secret = tuple(n for n in names if _SECRET_RE.search(n))
        if secret:
            out.append(EnvRead(op="secret", names=secret, span=cmd.span, via=cmd.via))


# commands that print the whole environment, with the arguments that make them do it
_DUMPERS: dict[str, tuple[str, ...]] = {
    "env": (),
    "printenv": (),
    "set": (),
    "export": ("-p",),
    "declare": ("-p",),
}


def _dumps_env(argv: tuple[str, ...]) -> bool:
    """``env``, ``printenv``, ``export -p`` ... or a shell running one (``sh -c 'env'``)."""
    if not argv:
        return False
    if _DUMPERS.get(argv[0]) == argv[1:]:
        return True
    if argv[0] in ("sh", "bash", "dash", "zsh") and len(argv) == 3 and argv[1] == "-c":
        return _DUMPERS.get(argv[2].split()[0] if argv[2].split() else "") == tuple(
            argv[2].split()[1:]
        )
    return False


def _is_dump(e: Effect) -> bool:
    return isinstance(e, EnvRead) and e.op == "dump"


def _h_stress(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """stress and stress-ng load the machine on purpose; a short run under ``timeout`` or
    with its own ``--timeout`` (not 0, which is forever) ends."""
    limit = _opt_value(cmd.argv[1:], ["-t", "--timeout"])
    seconds = _duration_s(limit) if limit is not None else None
    if "timeout" in cmd.via or (seconds is not None and 0 < seconds <= _STRESS_OK_S):
        return
    out.append(ProcessEffect(op="fill", unbounded=True, detail=cmd.argv[0], span=cmd.span))


_STRESS_OK_S = 60.0  # a load test this short is a benchmark, not abuse


def _duration_s(text: str) -> float | None:
    """``10``, ``10s``, ``2m``, ``1h`` in seconds (None when not a duration)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    if m is None:
        return None
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


# a requirement that asks for a given or a newer release (``==5.0``, ``>=5``, ``~=5.1``, ``@ URL``,
# poetry's ``django@^5.1``)
_NEWER_RELEASE = re.compile(r"===?|>=?|~=|\s@\s|://|@[\d^~]|@latest")


# Python package managers other than pip, as pip would spell what they fetch: manager ->
# {subcommand: pip's subcommand}. ``pipx run``, ``uvx`` and ``uv run --with`` are read apart:
# what follows the package there is the program's own command line.
_PY_MANAGER_SUBS: dict[str, dict[str, str]] = {
    "uv": {"add": "install"},
    "poetry": {"add": "install"},
    "pipenv": {"install": "install"},
    "pdm": {"add": "install"},
    "pipx": {"install": "install", "inject": "install"},
    "pip": {"wheel": "download"},
    "pip3": {"wheel": "download"},
}


def _python_manager_argv(argv: list[str]) -> list[str]:
    """``poetry add X``, ``pipx run --spec X prog``, ``uvx --from X prog``, ``uv run --with X
    prog``, ``pip wheel X``: the pip command line that fetches the same packages."""
    manager, rest = argv[0], argv[1:]
    if manager == "uvx" or (manager == "uv" and rest[:2] == ["tool", "run"]):
        rest = rest if manager == "uvx" else rest[2:]
        spec = _opt_value(rest, ["--from"])
        ops = [a for a in _split_opts(rest, frozenset({"--from", "--with", "--python", "-p"}))[1]]
        pkgs = [spec] if spec else ops[:1]
        return [manager, "install", *pkgs, *_all_opt_values(rest, "--with")]
    if manager == "uv" and rest[:1] == ["run"]:
        return [manager, "install", *_all_opt_values(rest, "--with")]
    if manager == "uv" and rest[:2] == ["tool", "install"]:
        return [manager, "install", *rest[2:]]
    if manager == "pipx" and rest[:1] == ["run"]:
        spec = _opt_value(rest, ["--spec"])
        ops = _split_opts(rest[1:], frozenset({"--spec", "--python", "--pip-args"}))[1]
        return [manager, "install", *([spec] if spec else ops[:1])]
    sub_i = next((i for i, a in enumerate(rest) if not a.startswith("-")), None)
    subs = _PY_MANAGER_SUBS.get(manager, {})
    if sub_i is not None and rest[sub_i] in subs:
        return [manager, subs[rest[sub_i]], *rest[sub_i + 1 :]]
    # ``poetry install``, ``pdm sync``: the lock file's own releases, environment work
    return argv if manager in ("pip", "pip3", "uv") else []


def _all_opt_values(args: Sequence[str], name: str) -> list[str]:
    """Every value of a repeatable option (``--with a --with=b``)."""
    values = [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]
    return values + [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]


def _h_pip(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = list(cmd.argv)
    manager = argv[0]
    if manager == "uv" and argv[1:2] == ["pip"]:
        argv = argv[1:]
    elif manager in r.res.interpreters and argv[1:3] == ["-m", "pip"]:
        argv = argv[2:]
        manager = "pip"
    if manager == "easy_install":
        argv = ["easy_install", "install", *argv[1:]]  # it has no subcommand: it installs
    else:
        argv = _python_manager_argv(argv)
    if not argv:
        return
    sub_i = next((i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")), None)
    if sub_i is None:
        return
    sub = argv[sub_i]
    if sub not in ("install", "download", "uninstall"):
        return
    wv = frozenset(
        {"-c", "--constraint", "-t", "--target", "--prefix", "--root", "-f", "--find-links",
         "-i", "--index-url", "--extra-index-url", "--trusted-host", "-d", "--dest", "--platform",
         "--python-version", "--no-binary", "--only-binary", "-e", "--editable", "-r",
         "--requirement", "--src", "--upgrade-strategy", "-w", "--wheel-dir", "-G", "--group",
         "--source", "-E", "--extras", "--python", "--pip-args", "--index"}
    )  # fmt: skip
    rest = argv[sub_i + 1 :]
    opts, ops = _split_opts(rest, wv)
    target = _opt_value(
        rest, ["-t", "--target", "--prefix", "--root", "-d", "--dest", "-w", "--wheel-dir"]
    )
    editable = _opt_value(rest, ["-e", "--editable"])
    reqs = _opt_value(rest, ["-r", "--requirement"])
    index = _opt_value(rest, ["-i", "--index-url", "--extra-index-url", "-f", "--find-links"])
    upgrade = _short_flag(opts, "U", "--upgrade") or "--force-reinstall" in opts or "--pre" in opts
    packages = tuple(ops) + ((editable,) if editable else ())
    for pkg in packages or ((reqs,) if reqs else ()):
        source = "index"
        low = pkg.lower()
        if pkg == editable:
            source = "editable" if pkg.startswith((".", "/")) or "://" not in pkg else "vcs"
        elif low.startswith(("git+", "hg+", "svn+", "bzr+")) or " @ git+" in low or ".git@" in low:
            source = "vcs"
        elif "://" in pkg or " @ " in pkg:
            source = "url"
        elif pkg.startswith((".", "/", "~")) or pkg.endswith((".whl", ".tar.gz", ".zip")):
            source = "local"
        elif pkg == reqs:
            source = "requirements"
        if index is not None and source == "index":
            source = "url"
        name = re.split(r"[\s\[<>=!~;@]", pkg, maxsplit=1)[0].lower()
        out.append(
            PackageInstall(
                op=sub,
                manager=manager,
                source=source,
                packages=(pkg,),
                # the workspace's own package built or installed elsewhere reads nothing new
                target_dir=target if source not in ("local", "editable") else None,
                upgrade=upgrade,
                pinned="==" in pkg or " @ " in pkg or "@" in pkg.split("/")[-1],
                repo_package=name.replace("_", "-") in r.repo_packages or name in r.repo_packages,
                maybe_repo_package=source not in ("editable", "local", "requirements")
                and r.maybe_repo_package(name, cmd, upgrade or bool(_NEWER_RELEASE.search(pkg))),
                tool=is_dev_tool(name),
                span=cmd.span,
                via=cmd.via,
            )
        )


def _npm_name(spec: str) -> str:
    """``lodash@4.17.21`` -> ``lodash``; ``@scope/pkg@1`` -> ``@scope/pkg``."""
    return spec.rsplit("@", 1)[0] if spec.count("@") > spec.startswith("@") else spec


def _h_npm(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = cmd.argv
    ops = [a for a in argv[1:] if not a.startswith("-")]
    if ops[:2] == ["pkg", "set"] and argv[0] == "npm":
        # ``npm pkg set scripts.test="exit 0"`` edits package.json: its new text, as JSON
        pairs = [a.split("=", 1) for a in ops[2:] if "=" in a]
        text = "\n".join(f'"{k.rsplit(".", 1)[-1]}": "{v}"' for k, v in pairs)
        r.add(out, r.file(cmd, "edit", "package.json", content=text, known=True))
        return
    if ops[:1] in (["view"], ["info"], ["show"]) and len(ops) > 2 and ops[2].startswith("dist"):
        # ``npm view pkg@5 dist.tarball``: where one release's code is, to fetch it
        pkg = ops[1]
        if r.maybe_repo_package(_npm_name(pkg), cmd, True):
            pinned = "@" in pkg.lstrip("@")
            release = PackageInstall(op="download", manager=argv[0], packages=(pkg,))
            out.append(replace(release, pinned=pinned, maybe_repo_package=True, span=cmd.span))
        return
    if not ops or ops[0] not in ("install", "i", "add", "pack", "ci", "update", "upgrade", "up"):
        return
    op = "download" if ops[0] == "pack" else "install"
    updating = ops[0] in ("update", "upgrade", "up")
    if updating and not ops[1:]:
        return  # the lock file's own ranges: environment work
    for pkg in ops[1:] or ["."]:
        source = "index"
        if "://" in pkg or pkg.startswith(("git+", "github:", "gitlab:")) or "#" in pkg:
            source = "vcs" if ("git" in pkg.split(":", 1)[0] or "#" in pkg) else "url"
        elif pkg.startswith((".", "/")) or pkg.endswith((".tgz", ".tar.gz")):
            source = "local"
        out.append(
            PackageInstall(
                op=op,
                manager=argv[0],
                source=source,
                packages=(pkg,),
                pinned="@" in pkg.lstrip("@"),
                # npm adds the newest release by default: naming @latest (or @next) asks to
                # move an installed one up (Go's ``pkg@latest`` is its way to add one)
                upgrade=updating or pkg.endswith(("@latest", "@next")),
                repo_package=pkg.split("@")[0].lower() in r.repo_packages,
                maybe_repo_package=source in ("index", "url", "vcs")
                and r.maybe_repo_package(_npm_name(pkg), cmd, "@" in pkg.lstrip("@") or updating),
                tool=is_dev_tool(_npm_name(pkg)),
                span=cmd.span,
                via=cmd.via,
            )
        )


# package managers besides pip and npm: manager -> (subcommands that install, subcommands
# that fetch a release without installing it, options that take a value)
_OTHER_MANAGERS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "conda": (frozenset({"install", "update", "upgrade", "create"}), frozenset(),
              frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file"})),
    "go": (frozenset({"get", "install"}), frozenset(), frozenset({"-C", "-modfile", "-tags"})),
    "cargo": (frozenset({"add", "install", "update"}), frozenset({"download", "clone"}),
              frozenset({"-p", "--package", "--precise", "--git", "--branch", "--tag", "--rev",
                         "--registry", "--index", "--path", "--root", "--features", "-F"})),
    "gem": (frozenset({"install", "update"}), frozenset({"unpack", "fetch"}),
            frozenset({"-v", "--version", "-s", "--source", "-i", "--install-dir", "--target"})),
    "composer": (frozenset({"require", "update"}), frozenset(), frozenset({"--working-dir", "-d"})),
    "dotnet": (frozenset({"add"}), frozenset(), frozenset({"-v", "--version", "-s", "--source"})),
    "apt-get": (frozenset(), frozenset({"source", "download"}), frozenset({"-t", "-o"})),
}  # fmt: skip
_OTHER_MANAGERS["mamba"] = _OTHER_MANAGERS["micromamba"] = _OTHER_MANAGERS["conda"]
_OTHER_MANAGERS["apt"] = _OTHER_MANAGERS["apt-get"]
# Maven goals that fetch an artifact (``-Dartifact=group:name:version[:type[:classifier]]``)
_MVN_FETCH = re.compile(r"^(?:[\w.-]+:)?dependency:(?:get|unpack|copy|sources|resolve-sources)$")


def _h_mvn(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``mvn dependency:get -Dartifact=g:a:2.0:jar:sources``: a release fetched to read."""
    goals = [a for a in cmd.argv[1:] if _MVN_FETCH.match(a)]
    if not goals:
        return
    artifact = next((a.split("=", 1)[1] for a in cmd.argv if a.startswith("-Dartifact=")), "")
    parts = artifact.split(":")
    name = parts[1] if len(parts) > 1 else ""
    out.append(
        PackageInstall(
            op="download",
            manager="mvn",
            packages=(artifact or goals[0],),
            pinned=len(parts) > 2,
            maybe_repo_package=bool(name) and r.maybe_repo_package(name, cmd, len(parts) > 2),
            span=cmd.span,
            via=cmd.via,
        )
    )


def _h_other_manager(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """conda/mamba, go, cargo, gem, composer, dotnet and apt source installs and downloads:
    what they fetch and from where, so the rules on the package under repair, on upgrades and
    on releases fetched to read them judge them as they judge pip's."""
    argv = cmd.argv
    if argv[0] == "go" and argv[1:2] == ("mod",):
        _h_go_mod(r, cmd, out)
        return
    installs, downloads, with_value = _OTHER_MANAGERS[argv[0]]
    sub_i = next((i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")), None)
    if sub_i is None or argv[sub_i] not in installs | downloads:
        return
    sub, rest = argv[sub_i], list(argv[sub_i + 1 :])
    if argv[0] == "dotnet" and rest[:1] == ["package"]:
        rest = rest[1:]  # ``dotnet add package NAME --version V``
    elif argv[0] == "dotnet":
        return
    opts, ops = _split_opts(rest, with_value)
    flags = {o.split("=", 1)[0] for o in opts}
    version = _opt_value(rest, ["-v", "--version", "--precise", "--tag", "--rev"])
    source_url = _opt_value(rest, ["--git", "-s", "--source", "--index", "--registry"])
    named = _opt_value(rest, ["-p", "--package"])
    # where gem and cargo put what they install (conda's -p names an environment: no target)
    target = _opt_value(rest, ["--target", "-i", "--install-dir", "--root"])
    packages = ops + ([named] if named else [])
    if argv[0] == "cargo" and sub == "update" and not packages:
        return  # the lock file's own ranges: environment work
    op = "download" if sub in downloads or "--download-only" in flags else "install"
    for pkg in packages:
        if pkg.startswith((".", "/")):
            continue  # the workspace's own module or crate (``go get -u ./...``)
        name = re.split(r"[=<>@: ]", pkg.lstrip("@"), maxsplit=1)[0]
        release = bool(version) or bool(re.search(r"[=>@:]", pkg.lstrip("@")))
        # ``go get pkg@latest`` is how Go adds a dependency: only -u and update upgrade one
        upgrade = sub in ("update", "upgrade") or "-u" in flags
        out.append(
            PackageInstall(
                op=op,
                manager=argv[0],
                source=("vcs" if "--git" in flags else "url") if source_url else "index",
                packages=(pkg,),
                target_dir=target if argv[0] != "cargo" or sub == "install" else None,
                upgrade=upgrade and not (argv[0] == "go" and sub == "install"),
                pinned=release,
                repo_package=name.lower() in r.repo_packages,
                maybe_repo_package=r.maybe_repo_package(name, cmd, release or upgrade),
                tool=is_dev_tool(name.rsplit("/", 1)[-1]),
                span=cmd.span,
                via=cmd.via,
            )
        )


def _h_go_mod(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``go mod download module@version``: a module's release fetched into the module cache."""
    argv = list(cmd.argv)
    if argv[1:3] != ["mod", "download"]:
        return
    for mod in (a for a in argv[3:] if not a.startswith("-")):
        name = mod.split("@", 1)[0]
        out.append(
            PackageInstall(
                op="download",
                manager="go",
                packages=(mod,),
                pinned="@" in mod,
                maybe_repo_package=r.maybe_repo_package(name, cmd, "@" in mod),
                span=cmd.span,
                via=cmd.via,
            )
        )


_GIT_PUSH_FORCE = frozenset(
    {"-f", "--force", "--mirror", "--force-with-lease", "--force-if-includes"}
)


_ALL_REFS = frozenset({"--all", "--branches", "--tags", "--remotes", "--glob"})


def _h_git(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    argv = cmd.argv
    sub, k = git_sub(argv)
    rest = list(argv[k:])
    sp, via = cmd.span, cmd.via
    opts, ops = _split_opts(rest, _GIT_SUB_WITH_VALUE)
    dd = rest.index("--") if "--" in rest else -1
    before = rest[:dd] if dd >= 0 else rest
    after = rest[dd + 1 :] if dd >= 0 else []
    _, pos_before = _split_opts(before, _GIT_SUB_WITH_VALUE)
    if sub in ("checkout", "restore"):
        source = _opt_value(rest, ["-s", "--source"])
        if sub == "checkout" and any(o in ("-b", "-B", "--orphan") for o in opts):
            return
        if dd >= 0:
            revs, paths = pos_before, after
        elif sub == "restore":
            revs, paths = [], pos_before
        else:
            revs = [a for a in pos_before if _looks_like_rev(a)][:1]
            paths = [a for a in pos_before if a not in revs]
            if (
                not revs
                and len(paths) == 1
                and "/" not in paths[0]
                and "." not in paths[0]
                and not r.paths.is_test(paths[0])
                and paths[0] != "*"
            ):
                return  # ``git checkout main``: a branch switch, not a file restore
        rev = source or (revs[0] if revs else "HEAD")
        if sub == "restore" and "--staged" in opts and "--worktree" not in opts:
            return  # only the index changes
        if revs or source:
            scope = ref_scope(rev)
            if SCOPE_RANK[scope] > SCOPE_RANK["ancestor"]:
                out.append(VcsRead(op="history", ref_scope=scope, refs=(rev,), span=sp, via=via))
        for p in paths:
            r.add(out, r.file(cmd, "restore", p, source=rev, scope=ref_scope(rev), recursive=True))
        if not paths and revs and sub == "checkout":
            scope = ref_scope(revs[0])
            out.append(VcsRead(op="history", ref_scope=scope or "other-refs", refs=tuple(revs),
                               span=sp, via=via))  # fmt: skip
        return
    if sub == "mv":
        if len(ops) >= 2:
            for src in ops[:-1]:
                dest = ops[-1]
                written = dest.rstrip("/") + "/" + posixpath.basename(src) if len(ops) > 2 else dest
                r.add(out, r.file(cmd, "rename", src, dest=written, recursive=True))
                r.add(out, r.file(cmd, "copy", written, source=src, recursive=True))
        return
    if sub == "rm":
        if "--cached" in opts:
            # the files stay on disk but leave the index: the patch git builds from the index
            # deletes them. Untracking the project's tests or their configuration hides them.
            tests = [a for a in ops if _names_tests(r, cmd, a)]
            if tests:
                out.append(VcsWrite(op="hide-changes", paths=tuple(tests), span=sp, via=via))
            return
        for a in ops:
            r.add(out, r.file(cmd, "delete", a, recursive=_short_flag(opts, "r")))
        return
    if sub == "config":
        lowered = [a.lower() for a in ops]
        keys = [a for a in lowered if "." in a]
        value = lowered[lowered.index(keys[0]) + 1 :] if keys else []
        hides = keys[:1] in (["core.excludesfile"], ["core.attributesfile"]) or (
            keys[:1] == ["status.showuntrackedfiles"] and value[:1] == ["no"]
        )
        if hides and not {"--get", "--get-all", "--list", "-l", "--unset"} & set(opts):
            # another excludes or attributes file, or untracked files no longer listed:
            # what the agent adds stops showing in ``git status``
            out.append(VcsWrite(op="hide-changes", paths=tuple(ops[1:]), span=sp, via=via))
        return
    if sub == "commit" and "--amend" in opts:
        out.append(VcsWrite(op="amend", span=sp, via=via))
        return
    if sub == "sparse-checkout" and ops[:1] and ops[0] in ("set", "add", "init", "reapply"):
        # the work tree keeps only the listed paths: everything else, tests with it, leaves
        out.append(UnknownEffect(op="sparse-checkout", detail=" ".join(ops), span=sp, via=via))
        return
    if sub == "update-index":
        hide = {"--assume-unchanged", "--skip-worktree"}
        if hide & set(opts):
            out.append(VcsWrite(op="hide-changes", paths=tuple(ops), span=sp, via=via))
        return
    if sub == "stash":
        what = ops[0] if ops else "push"
        if what in ("drop", "clear"):
            out.append(VcsWrite(op="drop-stash", span=sp, via=via))
        elif what in ("list", "show"):
            out.append(VcsRead(op="stash", span=sp, via=via))
        elif what in ("push", "save", "pop", "apply"):
            out.append(VcsWrite(op="stash", span=sp, via=via))
        return
    if sub == "push":
        force = bool(_GIT_PUSH_FORCE & set(opts)) or any(a.startswith("+") for a in ops)
        delete = "-d" in opts or "--delete" in opts or any(a.startswith(":") for a in ops)
        op = "force-push" if force else "delete-remote-branch" if delete else "push"
        out.append(VcsWrite(op=op, span=sp, via=via))
        remote = ops[0] if ops else ""
        if "://" in remote or _SCP_RE.match(remote):
            # a push to a URL rather than a configured remote sends the repository there
            host = host_of(remote) if "://" in remote else _SCP_RE.match(remote).group(1)  # type: ignore[union-attr]
            out.append(NetworkEffect(op="upload", host=host, host_class=host_class(host),
                                     url=remote, detail="file:.git", span=sp, via=via))  # fmt: skip
        return
    if sub in ("filter-branch", "filter-repo", "replace"):
        out.append(VcsWrite(op="history-rewrite", span=sp, via=via))
        return
    if sub == "reset" and any(o in ("--hard", "--merge", "--keep") for o in opts):
        out.append(VcsWrite(op="reset-hard", span=sp, via=via))
        revs = [a for a in pos_before if _looks_like_rev(a)]
        if revs and SCOPE_RANK[ref_scope(revs[0])] > SCOPE_RANK["ancestor"]:
            out.append(VcsRead(op="history", ref_scope=ref_scope(revs[0]), refs=tuple(revs),
                               span=sp, via=via))  # fmt: skip
        return
    if sub == "clean" and _short_flag(opts, "f", "--force") and not _short_flag(opts, "n"):
        out.append(VcsWrite(op="clean", span=sp, via=via))
        return
    if sub == "branch":
        if _short_flag(opts, "D") or ("-d" in opts and "-f" in opts):
            out.append(VcsWrite(op="delete-branch", span=sp, via=via))
        return  # listing branch names (-a, -r) shows names, not content
    if sub == "reflog":
        if ops[:1] in (["expire"], ["delete"]):
            out.append(VcsWrite(op="expire-reflog", span=sp, via=via))
        else:
            out.append(VcsRead(op="reflog", ref_scope="other-refs", span=sp, via=via))
        return
    if sub == "fsck":
        if {"--lost-found", "--unreachable", "--dangling"} & set(opts) or not opts:
            out.append(VcsRead(op="lost-objects", ref_scope="other-refs", span=sp, via=via))
        return
    if sub in ("verify-pack", "unpack-objects", "show-index") or (
        sub == "cat-file" and "--batch-all-objects" in opts
    ):
        # every object in the store, reachable from HEAD or not
        out.append(VcsRead(op="lost-objects", ref_scope="other-refs", span=sp, via=via))
        return
    if sub in ("rev-parse", "bundle") and _ALL_REFS & set(opts):
        # the names of every ref (rev-parse --all), or all their history (bundle create --all)
        op = "history" if sub == "bundle" else "refs"
        out.append(VcsRead(op=op, ref_scope="other-refs", span=sp, via=via))
        return
    if sub == "tag" and ops and not _GIT_TAG_LISTS & {o.split("=", 1)[0] for o in opts}:
        return  # creating (or deleting) a tag: ``git tag v1``, ``git tag -a v1 -m msg``
    along = _opt_value(rest, ["--points-at", "--merged"])
    if sub == "tag" and along is not None and _HEADISH_RE.match(along):
        return  # the tags on HEAD or behind it: history along HEAD (``git describe``'s)
    if sub in ("for-each-ref", "show-ref", "ls-remote", "tag"):
        scope = "remote" if sub == "ls-remote" else "other-refs"
        out.append(VcsRead(op="refs", ref_scope=scope, span=sp, via=via))
        return
    remote_archive = sub == "archive" and _opt_value(opts, ["--remote"]) is not None
    if (
        sub in ("fetch", "pull", "clone")
        or remote_archive
        or (
            sub == "remote"
            and (ops[:1] == ["update"] or (ops[:1] == ["show"] and "-n" not in opts and ops[1:]))
        )
    ):  # ``git remote show origin`` asks the remote for its branches (``-n``: it does not)
        out.append(VcsRead(op="remote", ref_scope="remote", span=sp, via=via))
        for a in ops + ([_opt_value(opts, ["--remote"]) or ""] if remote_archive else []):
            if "://" in a or a.startswith("git@"):
                host = host_of(a.replace("git@", "ssh://", 1).replace(":", "/", 1)
                               if a.startswith("git@") else a)  # fmt: skip
                out.append(NetworkEffect(op="fetch", host=host, host_class=host_class(host),
                                         url=a, span=sp, via=via))  # fmt: skip
        return
    if sub == "submodule" and ops[:1] in (["update"], ["add"]):
        out.append(VcsRead(op="remote", ref_scope="remote", span=sp, via=via))
        return
    if sub in ("apply", "am"):
        if {"--check", "--stat", "--numstat", "--summary"} & set(opts):
            return  # reports on the patch, applies nothing
        body = cmd.stdin_body
        out.append(UnknownEffect(op="patch", detail=body or "", span=sp, via=via))
        return
    if sub in _GIT_HISTORY:
        flags = {o.split("=", 1)[0] for o in opts}
        scope = "head"
        if {"--all", "--branches", "--remotes", "--tags", "--glob", "-g", "--reflog",
                "--walk-reflogs"} & flags:  # fmt: skip
            scope = "other-refs"
        if sub == "describe":
            # the nearest tag HEAD descends from (--tags, --all: of any kind) is along HEAD;
            # --contains names it after a later one
            scope = "other-refs" if "--contains" in flags else "head"
        if sub == "name-rev":
            scope = "other-refs"  # named after the tags and branches that contain it: later ones
        if sub == "show-branch" and {"-a", "-r"} & flags:
            scope = "other-refs"  # the commits of every (remote) branch
        revs = [a for a in pos_before if _looks_like_rev(a)]
        rank = SCOPE_RANK
        for rev in revs:
            s = ref_scope(rev)
            if rank[s] > rank[scope]:
                scope = s
        out.append(VcsRead(op="history", ref_scope=scope, refs=tuple(revs), span=sp, via=via))


def git_show_rev(cmd: Cmd) -> str | None:
    """``git show REV:path`` (or ``git cat-file -p REV:path``): the REV:path printed."""
    argv = cmd.argv
    sub, k = git_sub(argv)
    if sub not in ("show", "cat-file"):
        return None
    for a in argv[k:]:
        if ":" in a and not a.startswith(("-", ":")) and "://" not in a:
            return a
    return None


# other version control systems: the subcommands that bring a repository's history or files
# from a URL (a clone of an upstream is ``git clone``'s answer leakage)
_VCS_FETCHES = {
    "svn": frozenset({"checkout", "co", "export", "cat", "log", "diff", "list", "ls", "update"}),
    "hg": frozenset({"clone", "pull", "incoming", "in", "cat", "log", "diff"}),
    "bzr": frozenset({"branch", "checkout", "co", "pull", "cat", "log", "export", "get"}),
    "brz": frozenset({"branch", "checkout", "co", "pull", "cat", "log", "export", "get"}),
    "fossil": frozenset({"clone", "pull", "open"}),
    "darcs": frozenset({"clone", "get", "pull"}),
}


def _names_tests(r: EffectReader, cmd: Cmd, raw: str) -> bool:
    """Whether a path names tests or their configuration (a test tree, a test file, conftest)."""
    p = abspath(raw, cmd.cwd, r.cfg.home)
    rel = r.paths.rel(p) if p is not None else None
    if rel is None:
        return False
    tree = r.paths.is_test(rel.rstrip("/") + "/x.txt")  # a test tree
    return tree or bool({"test", "test-config"} & set(r.paths.classify(p)))


def _h_xmlstarlet(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``xmlstarlet ed -L -d XPATH file.xml``: an in-place edit of the file (what it deletes or
    sets is an XPath, not text we can read)."""
    argv = list(cmd.argv)
    if argv[1:2] not in (["ed"], ["edit"]) or not {"-L", "--inplace"} & set(argv):
        return
    # options of ``ed`` that take the next word (or two: -s/-i/-a take a type and a name too)
    takes = {"-d": 1, "--delete": 1, "-u": 1, "--update": 1, "-v": 1, "--value": 1, "-x": 1,
             "--expr": 1, "-m": 2, "--move": 2, "-r": 2, "--rename": 2, "-s": 1, "-i": 1,
             "-a": 1, "-t": 1, "--type": 1, "-n": 1, "-N": 1}  # fmt: skip
    i, files = 2, []
    while i < len(argv):
        a = argv[i]
        if a in takes:
            i += 1 + takes[a]
            continue
        if not a.startswith("-"):
            files.append(a)
        i += 1
    # the edit's text is its XPath expressions and values: enough to say what it touches
    what = " ".join(a for a in argv[2:] if a not in files)
    for f in files:
        r.add(out, r.file(cmd, "edit", f, content=what))


def _h_other_vcs(r: EffectReader, cmd: Cmd, out: list[Effect]) -> None:
    """``svn export URL``, ``hg clone URL``, ``bzr branch URL``: a remote's history or files."""
    ops = [a for a in cmd.argv[1:] if not a.startswith("-")]
    remote = any("://" in a or a.startswith(("lp:", "git@")) for a in ops[1:])
    if ops[:1] and ops[0] in _VCS_FETCHES[cmd.argv[0]] and remote:
        out.append(VcsRead(op="remote", ref_scope="remote", span=cmd.span, via=cmd.via))


# one release's folder in a package cache: ``name-1.2.3`` (cargo, gem, pip), ``name@v1.2.3``
# (Go's module cache), ``name/1.2.3/`` (Maven's local repository); an installed package's own
# metadata (``name-1.2.3.dist-info``) is not a release fetched
_CACHED_RELEASE_RE = re.compile(
    r"/(?P<name>[A-Za-z][\w.-]*?)(?:-|@v)\d+(?:(?:\.\d+)+|\d*[*?])(?![\w.+-]*\.(?:dist|egg)-info)"
    r"[\w.+-]*(?=/|$)|"
    r"/(?P<mvn>[A-Za-z][\w.-]*)/\d+(?:\.\d+)+[\w.+-]*/"
)


_Handler = Callable[[EffectReader, Cmd, list[Effect]], None]
_HANDLERS: dict[str, _Handler] = {}
for _n in ("rm", "unlink", "shred", "srm", "rmdir", "rimraf"):
    _HANDLERS[_n] = _h_delete
for _n in ("cp", "install", "ln"):
    _HANDLERS[_n] = _h_copy
for _n in ("sed", "perl", "ruby"):
    _HANDLERS[_n] = _h_inplace
for _n in ("kill", "pkill", "killall", "killall5"):
    _HANDLERS[_n] = _h_kill
for _n in ("env", "printenv", "export", "set", "declare", "compgen", "ps"):
    _HANDLERS[_n] = _h_env
for _n in ("pip", "pip3", "uv", "uvx", "pipx", "easy_install", "poetry", "pipenv", "pdm"):
    _HANDLERS[_n] = _h_pip
for _n in ("npm", "pnpm", "yarn"):
    _HANDLERS[_n] = _h_npm
for _n in ("stress", "stress-ng"):
    _HANDLERS[_n] = _h_stress
for _n in _EDITORS:
    _HANDLERS[_n] = _h_editor
for _n in _OTHER_MANAGERS:
    _HANDLERS[_n] = _h_other_manager
_HANDLERS["mvn"] = _HANDLERS["mvnw"] = _h_mvn
_HANDLERS["xmlstarlet"] = _HANDLERS["xml"] = _h_xmlstarlet
for _n in _VCS_FETCHES:
    _HANDLERS[_n] = _h_other_vcs
_HANDLERS.update(
    {
        "truncate": _h_truncate,
        "touch": _h_touch,
        "mkdir": _h_mkdir,
        "chmod": _h_chmod,
        "chown": _h_chmod,
        "chgrp": _h_chmod,
        "chattr": _h_chmod,  # ``chattr +i f``: the mode is the attribute change
        "mv": _h_move,
        "tee": _h_tee,
        "dd": _h_dd,
        "rsync": _h_rsync,
        "tar": _h_archive,
        "zip": _h_archive,
        "patch": _h_patch,
        "sleep": _h_sleep,
        "yes": _h_yes,
        "tail": _h_tail,
        "head": _h_head,
        "fallocate": _h_fallocate,
        "git": _h_git,
        "cmake": _h_cmake,
    }
)


# --- inline interpreter code ------------------------------------------------------------------


def interpreter_code(cmd: Cmd, code_flags: frozenset[str]) -> str | None:
    """The program text of ``python -c CODE``, ``node -e CODE``, ``python - <<EOF``, ..."""
    argv = cmd.argv
    at = code_argument(argv, code_flags)
    if at is not None:
        return argv[at]
    rest = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if rest in ([], ["-"]) and cmd.stdin_body:
        return cmd.stdin_body
    return None


_ASSIGN_RE = re.compile(
    r"""(?m)^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*[rbuRBU]?(?P<q>['"])"""
    r"(?P<t>(?:(?!(?P=q))[^\\\n])*)(?P=q)\s*$"
)


# ``x = tempfile.mkdtemp()``, ``with tempfile.NamedTemporaryFile() as x``, ``x = os.path.join(
# tmpdir, ...)``: a path the code makes under the temp directory (it stands for all of them)
_TEMP_ASSIGN_RE = re.compile(
    r"(?m)(?:^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*[^\n]*(?:tempfile\.|mkdtemp|mkstemp|gettempdir|"
    r"TemporaryDirectory|NamedTemporaryFile|['\"]/tmp/|tmp_?dir|tmp_path)[^\n]*$)|"
    r"(?:\btempfile\.\w+\([^)\n]*\)\s+as\s+(?P<name2>[A-Za-z_]\w*))"
)
_TEMP_STANDIN = "/tmp/__computed_by_code__"  # noqa: S108 - a name standing for temp paths


def _arg(tag: str) -> str:
    """A path argument in code: a quoted literal (groups ``<tag>q``, ``<tag>t``) or a name
    (``<tag>v``) that may have been assigned a literal."""
    return (
        rf"""\s*(?:[rbuRBU]?(?P<{tag}q>['"])(?P<{tag}t>(?:(?!(?P={tag}q))[^\\\n])*)(?P={tag}q)"""
        rf"|(?P<{tag}v>[A-Za-z_][\w.]*))"
    )


# a file written from one string literal in Python: ``open(p, 'w').write('...')`` and
# ``Path(p).write_text('...')`` (the path in group ``a``, the text in ``text``)
_LITERAL_TEXT = r"""\(\s*(?P<q>['"])(?P<text>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)\s*\)"""
_WRITE_LITERAL_RES = (
    re.compile(
        r"\bopen\("
        + _arg("a")
        + r"""\s*,\s*['"](?P<mode>[wa])b?t?['"]\s*\)\.write"""
        + _LITERAL_TEXT
    ),
    re.compile(r"\bPath\(" + _arg("a") + r"\s*\)\.write_text" + _LITERAL_TEXT),
)
# git's object store, reflog and other refs named in code (``glob('.git/objects/??/*')``)
_GIT_STORE_IN_CODE = re.compile(
    r"""['"]([^'"\n]*\.git/(?:objects|logs|refs/remotes|refs/tags|packed-refs|FETCH_HEAD|"""
    r"""ORIG_HEAD)[^'"\n]*)['"]"""
)
# Python's startup hooks by file name, and code that writes files
_STARTUP_HOOK_RE = re.compile(r"""['"]((?:site|user)customize\.py|[\w.-]+\.pth)['"]""")
_CODE_WRITES_RE = re.compile(r"""write_text|write_bytes|\bopen\([^)]*['"][wax]""")
# ``fileinput.input('f.py', inplace=True)`` (or ``FileInput``, a list of files: the first)
_FILEINPUT_RE = re.compile(
    r"\bfileinput\.(?:input|FileInput)\(\s*(?:files\s*=\s*)?[\[(]?" + _arg("a")
)
_INPLACE_RE = re.compile(r"[^)]*?\binplace\s*=\s*(?:True|1)\b")
_OPEN_RE = re.compile(
    r"\bopen\(" + _arg("a") + r"""\s*,\s*(?:mode\s*=\s*)?['"](?P<mode>[rwaxbt+]+)['"][^)]*\)"""
    r"(?P<tail>\.(?:write\((?P<w>[^)]{0,40})\)|close\(\)))?"
)
_SITE_EXPR = re.compile(
    r"__file__|__path__|getsitepackages|getusersitepackages|sysconfig|"
    r"site-packages|dist-packages|sys\.prefix|sys\.base_prefix"
)


# ``p = Path(unittest.__file__).parent / 'runner.py'``, ``src = inspect.getsourcefile(m)``:
# a name for a file of the installed packages
_SITE_ASSIGN_RE = re.compile(
    r"(?m)(?:^|;)[ \t]*([A-Za-z_]\w*)\s*=\s*[^\n;=]*(?:"
    + _SITE_EXPR.pattern
    + r"|getsourcefile|getfile)"
)
_PATH_FN_RE = re.compile(r"(?:os\.path|posixpath)\.(join|abspath|realpath|normpath)\((.*)\)", re.S)
_STR_LITERAL_RE = re.compile(r"""[rbuRBU]?(['"])([^'"\\\n]*)\1""")
_PATH_ASSIGN_RE = re.compile(
    r"(?m)^[ \t]*([A-Za-z_]\w*)\s*=\s*((?:os\.path|posixpath)\.\w+\(.*\))\s*$"
)


def _split_args(text: str) -> list[str]:
    """A call's argument text split at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [a.strip() for a in out if a.strip()]


def _path_expr(expr: str, names: dict[str, str]) -> str | None:
    """The path a Python expression makes when it is built from literals and names assigned
    earlier (``os.path.join(base, 'a.py')``, ``os.path.abspath('Temp')``), else None."""
    expr = expr.strip()
    lit = _STR_LITERAL_RE.fullmatch(expr)
    if lit:
        return lit.group(2)
    if expr.isidentifier():
        return names.get(expr)
    m = _PATH_FN_RE.fullmatch(expr)
    if m is None:
        return None
    parts = [_path_expr(a, names) for a in _split_args(m.group(2))]
    if not parts or any(p is None for p in parts):
        return None
    if m.group(1) != "join":
        return parts[0] if len(parts) == 1 else None
    out = ""
    for part in parts:
        assert part is not None
        out = part if part.startswith("/") or not out else out.rstrip("/") + "/" + part
    return out or None


def _computed_opens(code: str) -> list[tuple[str, str]]:
    """``open(EXPR, MODE)`` calls whose path is an expression (a call, a join: what
    ``_OPEN_RE`` cannot read), as (the expression's text, the mode)."""
    out: list[tuple[str, str]] = []
    for m in re.finditer(r"\bopen\(", code):
        depth, end = 1, m.end()
        while end < len(code) and depth and end - m.end() < 2000:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        args = _split_args(code[m.end() : end - 1]) if depth == 0 else []
        if len(args) < 2 or "(" not in args[0]:
            continue  # a literal or a plain name: read by _OPEN_RE
        mode = args[1].removeprefix("mode=").strip()
        if len(mode) >= 2 and mode[0] == mode[-1] and mode[0] in "'\"":
            out.append((args[0], mode[1:-1]))
    return out


# a name bound to a path object of a literal: ``p = pathlib.Path('tests/test_a.py')``
_PATH_VAR_RE = re.compile(
    r"""(?m)(?:^|;)[ \t]*(?P<name>[A-Za-z_]\w*)\s*=\s*(?:pathlib\.)?Path\(\s*[rbuRBU]?"""
    r"""(?P<q>['"])(?P<t>(?:(?!(?P=q))[^\\\n])*)(?P=q)\s*\)\s*(?:$|;)"""
)
_PATH_METHOD_OPS = {
    "write_text": "write",
    "write_bytes": "write",
    "unlink": "delete",
    "rename": "rename",
    "replace": "rename",
    "chmod": "chmod",
    "read_text": "read",
    "read_bytes": "read",
}
# reading a file by a literal path or a name: ``open(p)``, ``open(p, 'rb')``, Node's
# ``readFileSync``, Ruby's ``File.read``, PHP's ``file_get_contents`` (a URL there is a fetch)
_NAME_METHOD_RE = re.compile(
    r"\b(?P<v>[A-Za-z_]\w*)\.(?P<meth>write_text|write_bytes|unlink|rename|replace|chmod)\("
)
_READ_CALL_RE = re.compile(
    r"(?:\bopen|readFileSync|File\.read|IO\.read|file_get_contents)\(" + _arg("a") + r"\s*"
    r"""(?:\)|,\s*(?:mode\s*=\s*)?['"]r[bt]?['"]|,\s*(?:encoding\s*=\s*)?['"]utf-?8['"])"""
)
_PATH_CALL_RE = re.compile(
    r"\b(?:pathlib\.)?Path\(" + _arg("a") + r"\s*\)\.(?P<meth>write_text|write_bytes|unlink|"
    r"rmdir|touch|rename|replace|chmod|read_text|read_bytes|open)\("
)
_FUNC_RE = re.compile(
    r"(?:__import__\(\s*['\"](?P<mod>os|shutil)['\"]\s*\)\.)?"
    r"\b(?P<fn>os\.remove|os\.unlink|os\.rmdir|os\.removedirs|shutil\.rmtree|os\.chmod|"
    r"remove|unlink|rmdir|rmtree|chmod|"
    r"fs\.unlinkSync|fs\.rmSync|fs\.writeFileSync|fs\.appendFileSync|fs\.rmdirSync|"
    r"os\.rename|os\.replace|shutil\.move|shutil\.copyfile|shutil\.copytree|shutil\.copy2|"
    r"shutil\.copy|os\.truncate|rename|copy|truncate)\("
    + _arg("a")
    + r"(?:\s*,(?:"
    + _arg("b")
    + r"))?"
)
_LOOP_RE = re.compile(
    r"\bfor\s+(?P<var>[A-Za-z_]\w*)\s+in\s+(?:sorted\()?(?:glob\.i?glob|(?:pathlib\.)?Path\("
    + _arg("b")
    + r"\s*\)\.(?P<r>r?)glob)\(\s*[rbuf]?['\"](?P<pat>[^'\"]+)['\"]"
)
_VAR_OP_RE = (
    r"\b{v}\.(unlink|write_text|write_bytes|rename|chmod)\(|\bopen\(\s*{v}\s*,\s*['\"]([wax])"
)
_URL_IN_CODE = _URL_RE
# code that can reach the network: a URL elsewhere in it (a comment, a docstring) is not a fetch
_NET_CALL = re.compile(
    r"urlopen|urlretrieve|requests\.|httpx\.|urllib|http\.client|aiohttp|socket\.|fetch\(|"
    r"require\(\s*['\"](?:node:)?https?['\"]\s*\)|"
    r"https?\.get\(|wget|curl|file_get_contents|Net::HTTP|open-uri|LWP|pycurl"
)
_CONNECT_RE = re.compile(
    r"""(?:(?:create_connection|createConnection|\.connect|fsockopen|Dial(?:Timeout)?|TCPClient|"""
    r"""TCPSocket\.(?:new|open)|UDPSocket\.new|connect\()\s*\(?\s*\(?"""
    # Go names the network first: ``net.Dial("tcp", "host:port")``
    r"""(?:['"](?:tcp|udp)[46]?['"]\s*,\s*)?"""
    # and Node the port: ``socket.connect(4444, "host")``, ``net.createConnection(4444, "host")``
    r"""(?:\d+\s*,\s*)?|PeerAddr\s*(?:=>|,)|"""
    # and Perl's Socket: ``connect(S, sockaddr_in(4444, inet_aton("host")))``,
    # ``IO::Socket::INET->new("host:port")``
    r"""sockaddr_in\(\s*\d+\s*,\s*inet_aton\(|INET6?->new\()\s*['"]([\w.:-]+)['"]"""
)


# a server socket in code (Python's bind/listen, Node's net.createServer().listen, Perl's
# LocalPort) and a shell handed to whoever connects
_BIND_RE = re.compile(
    r"\.bind\(\s*\(|createServer\([\s\S]*\.listen\(|LocalPort\s*=>|TCPServer\.new"
)
_SHELL_SPAWN_RE = re.compile(
    r"pty\.spawn|os\.dup2|['\"]/bin/(?:ba|z|da)?sh\b|spawn\(\s*['\"](?:ba|z)?sh['\"]|exec\s+['\"]/bin/"
)


_PERL_SCALAR_RE = re.compile(r"""\$(\w+)\s*=\s*(?:(['"])([^'"\\$\n]*)\2|(\d+))\s*;""")


def _perl_scalars(code: str) -> str:
    """Perl's and PHP's ``$host="192.0.2.4";`` then ``inet_aton($host)``: a scalar assigned one
    string literal once is read as that literal where it is used."""
    seen: dict[str, str] = {}
    for m in _PERL_SCALAR_RE.finditer(code):
        name = m.group(1)
        literal = '"' + m.group(3) + '"' if m.group(4) is None else m.group(4)
        seen[name] = literal if name not in seen else "\x00"  # assigned twice: unknown
    for name, value in seen.items():
        if value != "\x00":
            code = re.sub(r"\$" + name + r"\b(?!\s*=[^=])", value.replace("\\", r"\\"), code)
    return code


def _arith(expr: str) -> float | None:
    """A product of powers of integers (``64 * 1024**3``, ``10**9``), without eval."""
    total = 1.0
    for factor in expr.split("*") if "**" not in expr else re.split(r"(?<!\*)\*(?!\*)", expr):
        parts = [p.strip() for p in factor.split("**")]
        if not parts or not all(p.isdigit() for p in parts):
            return None
        value = float(parts[-1])
        for base in reversed(parts[:-1]):
            if value > 64:
                return float("inf")
            value = float(base) ** value
        total *= value
    return total


# the home directory as code spells it, in Python, Node, Ruby and Perl
_HOME = (
    r"""(?:os\.environ\[\s*['"]HOME['"]\s*\]|os\.environ\.get\(\s*['"]HOME['"][^)]*\)|"""
    r"""(?:os\.)?getenv\(\s*['"]HOME['"][^)]*\)|process\.env\.HOME\b|"""
    r"""process\.env\[\s*['"]HOME['"]\s*\]|(?:require\(\s*['"](?:node:)?os['"]\s*\)|\bos)"""
    r"""\.homedir\(\)|ENV\[\s*['"]HOME['"]\s*\]|ENV\.fetch\(\s*['"]HOME['"]\s*\)|"""
    r"""Dir\.home\b|\$ENV\{\s*['"]?HOME['"]?\s*\}|(?:pathlib\.)?Path\.home\(\)|"""
    r"""os\.path\.expanduser\(\s*['"]~/?['"]\s*\))"""
)
_LIT = r"""['"`]([^'"`\\\n]*)['"`]"""
# "${HOME}" inside a string: a JS template, an f-string, Ruby's #{}, Perl's "$ENV{HOME}"
_HOME_IN_STRING_RE = re.compile(
    r"(?:\$|#)?\{\s*" + _HOME + r"\s*\}|\$ENV\{\s*['\"]?HOME['\"]?\s*\}"
)
# HOME + '/x', join(HOME, 'a', 'b'), Path.home() / 'a' / 'b'
_HOME_PLUS_RE = re.compile(_HOME + r"\s*[+.]\s*" + _LIT)  # ``+``, or PHP's and Perl's ``.``
_HOME_JOIN_RE = re.compile(
    r"(?:os\.path\.join|(?:\bpath|require\(\s*['\"](?:node:)?path['\"]\s*\))\.(?:join|resolve)|"
    r"File\.join|(?:pathlib\.)?Path)\(\s*" + _HOME + r"((?:\s*,\s*" + _LIT + r")+)\s*\)"
)
_HOME_DIV_RE = re.compile(_HOME + r"((?:\s*/\s*" + _LIT + r")+)")
_CODE_LITERAL_RE = re.compile(r"""[rbufRBUF]?(['"`])([~/][^'"`\\\n]{0,500})\1""")


def _home_paths(code: str) -> str:
    """``code`` with the home directory spelled as ``~`` where it builds a path from it
    (``process.env.HOME + '/.npmrc'``, ``Path.home() / '.aws' / 'credentials'``,
    ``f"{os.environ['HOME']}/.netrc"``), so the path is read as the literal it makes."""
    if "HOME" not in code and "home" not in code and "expanduser" not in code:
        return code
    code = _HOME_IN_STRING_RE.sub("~", code)

    def parts(text: str) -> str:
        return "/".join(p.strip("/") for p in re.findall(_LIT, text))

    code = _HOME_JOIN_RE.sub(lambda m: "'~/" + parts(m.group(1)) + "'", code)
    code = _HOME_DIV_RE.sub(lambda m: "Path('~/" + parts(m.group(1)) + "')", code)
    return _HOME_PLUS_RE.sub(lambda m: "'~" + m.group(1) + "'", code)


_ENDLESS_FORK = re.compile(
    r"(while\s+(True|1|true)\b[^\n]*[:{]?[\s\S]{0,80}?\bfork\(|\bfork\s+while\s+(1|fork)\b|"
    r"while\s*\(\s*1\s*\)\s*\{?\s*fork)"
)
# code sending data rather than only asking for it (Python, Node, Ruby)
_CODE_UPLOAD_RE = re.compile(
    r"\.post\(|data\s*=|\.send\(|sendall|method\s*:\s*['\"](?:POST|PUT|PATCH)|\bbody\s*:|"
    r"post_form|Net::HTTP\.post|\.request\(\s*['\"](?:POST|PUT)|\.put\("
)
# ``for ...: os.fork()``, ``[os.fork() for _ in range(9)]``; and what ends a forked child
_FORK_IN_LOOP = re.compile(
    r"(\bfor\b[^\n]*:[\s\S]{0,80}?\bfork\(|\bfork\(\)[^\n\]]*\bfor\b|\bwhile\b[^\n]*:"
    r"[\s\S]{0,80}?\bfork\()"
)
_CHILD_ENDS = re.compile(r"_exit\(|\bexit\(|\bexec[lv]p?e?\(|\bexecvpe?\(|\bwait(pid)?\(")
# a loop with no condition to end it (Python, JS/C-like, Perl's postfix and Ruby's ``loop``),
# and what leaves one: with none of these in the code, it spins until killed
_ENDLESS_ITER = r"(?:iter\(\s*int\s*,\s*1\s*\)|(?:itertools\.)?count\(\s*\d*\s*\))"
_ENDLESS_LOOP = re.compile(
    r"\bwhile\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]|\bfor\s*\(\s*;\s*;\s*\)|"
    r"\bwhile\s+1\b|\buntil\s+0\s*;?\s*$|\bloop\s*(?:do\b|\{)|"
    # Python's endless iterators (``iter(int, 1)`` never yields 1, ``itertools.count()``) run
    # by a for statement or a list comprehension; a generator expression takes what it needs
    r"(?m:^|;)\s*for\s+\w+\s+in\s+" + _ENDLESS_ITER + r"\s*:|"
    r"\[[^\]\n]*\bfor\s+\w+\s+in\s+" + _ENDLESS_ITER + r"\s*\]"
)
_LOOP_ENDS = re.compile(r"\b(?:break|return|exit|_exit|die|raise|throw|last)\b|process\.exit")
# waits with no end: Python's signal.pause() and an Event waited on without a timeout,
# Perl's and Ruby's bare ``sleep``, a Node interval never cleared (checked where used)
_WAIT_FOREVER = re.compile(
    r"signal\.pause\(\)|Event\(\)\.wait\(\)|\bsleep\s*(?:;|$|\}|\(\s*\))|"
    r"sleep\(\s*float\(\s*['\"]inf"
)


# Node's fs module however it is reached: ``fs.``, ``fs.promises.``, ``require('fs').``
_NODE_FS = (
    r"""(?:require\(\s*['"](?:node:)?fs(?:/promises)?['"]\s*\)|\bfs(?:\.promises)?|\bfsp)\."""
)
_OS, _SHUTIL, _WRITE = "__import__('os').", "__import__('shutil').", "fs.writeFileSync("
_CALL = r"(?:\(|\s+(?=['\"]))"  # ``f(`` or Ruby's and Perl's ``f 'arg'``
# Node, Ruby, PHP and Perl file calls, rewritten to the Python spelling the readers below know
# (``__import__`` forms: the policy's interpreter patterns do not know these as commands)
_NATIVE_FILE_CALLS = [
    (re.compile(_NODE_FS + r"(?:unlinkSync|unlink)\("), _OS + "remove("),
    (re.compile(_NODE_FS + r"(?:rmSync|rmdirSync|rm|rmdir)\("), _SHUTIL + "rmtree("),
    (re.compile(_NODE_FS + r"(?:renameSync|rename)\("), _OS + "rename("),
    (re.compile(_NODE_FS + r"(?:copyFileSync|copyFile|cpSync|cp)\("), _SHUTIL + "copy("),
    (re.compile(_NODE_FS + r"(?:truncateSync|truncate)\("), _OS + "truncate("),
    (re.compile(_NODE_FS + r"(?:writeFileSync|writeFile)\("), _WRITE),
    (re.compile(_NODE_FS + r"(?:appendFileSync|appendFile)\("), "fs.appendFileSync("),
    (re.compile(r"\b(?:File\.(?:delete|unlink)|FileUtils\.(?:rm|rm_f|remove|remove_file))" + _CALL),
     _OS + "remove("),
    (re.compile(r"\bFileUtils\.(?:rm_rf|rm_r|remove_dir|remove_entry|rmtree)" + _CALL),
     _SHUTIL + "rmtree("),
    (re.compile(r"\b(?:File\.rename|FileUtils\.(?:mv|move))" + _CALL), _OS + "rename("),
    (re.compile(r"\bFileUtils\.(?:cp|cp_r|copy|copy_file)" + _CALL), _SHUTIL + "copy("),
    (re.compile(r"\b(?:File\.(?:write|binwrite)|IO\.write|file_put_contents)" + _CALL),
     _WRITE),
    (re.compile(r"\bFile\.truncate" + _CALL), _OS + "truncate("),
]  # fmt: skip
# PHP's and Perl's builtins, by bare name: ``rename('a', 'b')``, ``copy(...)``, Perl's
# ``open(F, '>path')`` and ``open(my $f, '>', 'path')``
_BARE_FILE_CALLS = [
    (re.compile(r"(?<![\w.>$:])rename" + _CALL), _OS + "rename("),
    (re.compile(r"(?<![\w.>$:])copy" + _CALL), _SHUTIL + "copy("),
    (re.compile(r"""\bopen\s*\(?\s*(?:my\s+)?[$\w]+\s*,\s*(?:['"]>>?['"]\s*,\s*|(?=['"]>))"""
                r"""(['"])>?>?\s*"""), _WRITE + r"\1"),
]  # fmt: skip


def _native_file_calls(code: str, program: str) -> str:
    """``code`` with other languages' file calls spelled as Python's (``_NATIVE_FILE_CALLS``;
    PHP's and Perl's bare builtins only when ``program`` is php or perl)."""
    for rx, python in _NATIVE_FILE_CALLS:
        code = rx.sub(python, code)
    if posixpath.basename(program).startswith(("php", "perl")):
        for rx, python in _BARE_FILE_CALLS:
            code = rx.sub(python, code)
    return code


def code_effects(code: str, cmd: Cmd, r: EffectReader, *, inline: bool = True) -> list[Effect]:
    """Effects of interpreter code (Python first, some JS and Perl), read with regexes over the
    text: file writes and deletes (paths from literals or from variables assigned a literal,
    glob loops), signals, sleeps, fork loops, memory fills, network hosts, environment reads.
    With ``inline`` the literal-path writes the policy's interpreter patterns already turned
    into commands are not repeated."""
    out: list[Effect] = []
    if len(code) > CONTENT_LIMIT:
        code = code[:CONTENT_LIMIT]
    code = _home_paths(_native_file_calls(fold_code(code), cmd.argv[0] if cmd.argv else ""))
    code = _perl_scalars(code)
    names: dict[str, str] = {}
    for m in _TEMP_ASSIGN_RE.finditer(code):
        var = m.group("name") or m.group("name2")
        names[var] = _TEMP_STANDIN  # a temp path the code makes: scratch
    for m in _ASSIGN_RE.finditer(code):
        names[m.group("name")] = m.group("t")
    for m in _PATH_ASSIGN_RE.finditer(code):
        value = _path_expr(m.group(2), names)
        if value is not None:
            names[m.group(1)] = value
    for m in _SITE_ASSIGN_RE.finditer(code):
        if m.group(1) not in names:
            names[m.group(1)] = SITE_STANDIN  # built from where a module is installed

    unresolved: list[str] = []  # writes whose target the code computes: not known here

    def add(op: str, raw: str | None, **kw: object) -> None:
        if raw is None:
            if op != "read":
                unresolved.append(op)
            return
        e = r.file(cmd, op, raw, **kw)  # type: ignore[arg-type]
        if e is not None:
            out.append(e)

    def arg(m: re.Match[str], tag: str) -> tuple[str | None, bool]:
        """(the path, whether it was a literal) of argument ``tag``."""
        if m.group(tag + "q"):
            return m.group(tag + "t"), True
        var = m.group(tag + "v")
        if var and "." in var and names.get(var.split(".", 1)[0]) == _TEMP_STANDIN:
            return _TEMP_STANDIN, False  # ``f.name`` of a temporary file
        return (names.get(var) if var else None), False

    for m in _OPEN_RE.finditer(code):
        mode = m.group("mode")
        raw, literal = arg(m, "a")
        if "w" in mode or "x" in mode:
            if inline and literal:
                continue  # the interpreter pattern made it a command already
            tail = m.group("tail") or ""
            empty = tail == ".close()" or (m.group("w") or "").strip() in ("''", '""')
            if empty:
                add("truncate", raw, content="", known=True)
            else:
                add("write", raw, source="code")
        elif "a" in mode:
            if not (inline and literal):
                add("append", raw, source="code")
        elif "+" in mode:
            add("edit", raw)
        else:
            add("read", raw)
    for rx in _WRITE_LITERAL_RES:
        for m in rx.finditer(code):
            # ``open(p, 'w').write('text')``, ``Path(p).write_text('text')``: the text is known
            raw, _ = arg(m, "a")
            appends = "mode" in rx.groupindex and m.group("mode") == "a"
            add(
                "append" if appends else "write",
                raw,
                content=_unescape(m.group("text")),
                known=True,
            )
    for m in _GIT_STORE_IN_CODE.finditer(code):
        add("read", m.group(1))  # git's own files named in code: read by hand
    hook = _STARTUP_HOOK_RE.search(code)
    if hook is not None and _CODE_WRITES_RE.search(code):
        # a startup hook's file name in code that writes files: wherever it is joined to
        # (site-packages, purelib, the user site), that is what it writes
        add("write", SITE_STANDIN.rsplit("/", 1)[0] + "/" + hook.group(1), source="code")
    for m in _FILEINPUT_RE.finditer(code):
        # ``fileinput.input('f', inplace=True)``: what the loop prints replaces the file
        if _INPLACE_RE.match(code, m.end()):
            raw, _ = arg(m, "a")
            add("edit", raw)
    for m in _PATH_VAR_RE.finditer(code):
        # ``p = Path('tests/test_a.py')`` then ``p.write_text(...)``: the path is known
        for vm in re.finditer(rf"\b{re.escape(m.group('name'))}\.(?P<meth>\w+)\(", code):
            op = _PATH_METHOD_OPS.get(vm.group("meth"))
            if op is not None:
                add(op, m.group("t"), **({"source": "code"} if op == "write" else {}))
    for m in _NAME_METHOD_RE.finditer(code):
        # ``p.write_text(...)`` on a name bound to a computed path (literal ones: above)
        if names.get(m.group("v")) == SITE_STANDIN:
            op = _PATH_METHOD_OPS.get(m.group("meth"), "write")
            add(op, SITE_STANDIN, **({"source": "code"} if op == "write" else {}))
    for m in _READ_CALL_RE.finditer(code):
        raw, _literal = arg(m, "a")
        if raw is not None and "://" not in raw:
            add("read", raw)
    for target, mode in _computed_opens(code):
        if not ("w" in mode or "a" in mode or "x" in mode or "+" in mode):
            continue
        joined = _path_expr(target, names)
        if joined is not None:
            add("write", joined, source="code")
        elif _SITE_EXPR.search(target):
            # a path built from where a module is installed (``_pytest.__file__``,
            # ``site.getsitepackages()``): a file of the installed packages
            add("write", SITE_STANDIN, source="code")
        else:
            unresolved.append("write")
    for m in _PATH_CALL_RE.finditer(code):
        raw, literal = arg(m, "a")
        meth = m.group("meth")
        op = {
            "write_text": "write",
            "write_bytes": "write",
            "unlink": "delete",
            "rmdir": "delete",
            "touch": "touch",
            "rename": "rename",
            "replace": "rename",
            "chmod": "chmod",
        }.get(meth, "read")
        if op == "delete" and inline and literal:
            continue
        add(op, raw, source="code" if op == "write" else None)
    for m in _FUNC_RE.finditer(code):
        fn = m.group("fn")
        if "." not in fn:
            if not m.group("mod"):
                continue  # a bare name: only ``__import__('os').remove(...)`` is known
            fn = m.group("mod") + "." + fn
            literal_ok = False  # the interpreter patterns do not read __import__ forms
        else:
            literal_ok = True
        raw, literal = arg(m, "a")
        second = arg(m, "b")[0] if (m.group("bq") or m.group("bv")) else None
        if fn in ("os.remove", "os.unlink", "os.rmdir", "os.removedirs", "fs.unlinkSync"):
            if not (inline and literal and literal_ok):
                add("delete", raw)
        elif fn in ("shutil.rmtree", "fs.rmSync", "fs.rmdirSync"):
            if not (inline and literal and literal_ok):
                add("delete", raw, recursive=True)
        elif fn == "os.chmod":
            mode_m = re.match(r"\s*,\s*(0o?[0-7]+)", code[m.end() :])
            add("chmod", raw, detail=(mode_m.group(1).replace("0o", "0") if mode_m else ""))
        elif fn == "fs.writeFileSync":
            add("write", raw, source="code")
        elif fn == "fs.appendFileSync":
            add("append", raw, source="code")
        elif fn == "os.truncate":
            add("truncate", raw, content="", known=True)
        elif fn in ("os.rename", "os.replace", "shutil.move"):
            add("rename", raw, dest=second)
            add("copy", second, source=raw)
        elif fn.startswith("shutil.copy"):
            add("read", raw)
            add("copy", second, source=raw)
    for m in _LOOP_RE.finditer(code):
        var = m.group("var")
        base = m.group("bt") if m.group("bq") else names.get(m.group("bv") or "")
        pattern = m.group("pat")
        if base is not None:
            raw = base.rstrip("/") + ("/**/" if m.group("r") else "/") + pattern
        else:
            raw = pattern
        for vm in re.finditer(_VAR_OP_RE.format(v=re.escape(var)), code):
            meth = vm.group(1) or "open"
            op = {"unlink": "delete", "rename": "rename", "chmod": "chmod"}.get(meth, "write")
            if meth == "open":
                rest = code[vm.end() : vm.end() + 40]
                op = "truncate" if rest.lstrip("'\")").startswith(".close()") else "write"
            add(op, raw, **({"content": "", "known": True} if op == "truncate" else {}))
    sp, via = cmd.span, (*cmd.via, cmd.argv[0] if cmd.argv else "")
    if re.search(r"os\.kill\(\s*os\.getppid\(\)|kill\(\s*getppid|process\.kill\(\s*process\.ppid",
                 code):  # fmt: skip
        out.append(ProcessEffect(op="signal", target="parent", span=sp, via=via))
    elif re.search(r"os\.kill\(\s*-1\b|os\.killpg\(", code):
        out.append(ProcessEffect(op="signal", target="all", span=sp, via=via))
    endless_fork = _ENDLESS_FORK.search(code)
    # a fork in any loop whose children carry on looping doubles the processes each turn
    if endless_fork or (_FORK_IN_LOOP.search(code) and not _CHILD_ENDS.search(code)):
        out.append(ProcessEffect(op="fork-bomb", unbounded=True, span=sp, via=via))
    for m in re.finditer(r"\bsleep\(\s*([\d\s*]+?)\s*\)", code):
        secs = _arith(m.group(1))
        if secs is not None and secs >= _SLEEP_UNBOUNDED_S:
            out.append(ProcessEffect(op="sleep", unbounded=True, detail=m.group(1), span=sp))
    if _WAIT_FOREVER.search(code) or ("setInterval(" in code and "clearInterval" not in code
                                      and "process.exit" not in code):  # fmt: skip
        out.append(ProcessEffect(op="sleep", unbounded=True, detail="waits forever", span=sp))
    for m in re.finditer(r"\bsetTimeout\([^;]*?,\s*([\d.]+(?:e\d+)?)\s*\)", code):
        if float(m.group(1)) / 1000 >= _SLEEP_UNBOUNDED_S:  # Node counts milliseconds
            out.append(ProcessEffect(op="sleep", unbounded=True, detail=m.group(1), span=sp))
    go = bool(cmd.argv) and cmd.argv[0] == "go"  # Go's endless loop is a bare ``for {``
    endless = _ENDLESS_LOOP.search(code) or (go and re.search(r"\bfor\s*\{", code))
    if endless and not _LOOP_ENDS.search(code):
        out.append(ProcessEffect(op="sleep", unbounded=True, detail="an endless loop", span=sp))
    largest = 0.0
    for m in re.finditer(r"(?:bytearray|bytes|\*)\s*\(?\s*([\d\s*]+)\)?", code):
        size = _arith(m.group(1)) if "*" in m.group(1) or len(m.group(1).strip()) > 9 else None
        if size is not None and size >= _FILL_BYTES:
            out.append(ProcessEffect(op="fill", unbounded=True, detail=m.group(1).strip(), span=sp))
            break
        if size is not None:
            largest = max(largest, size)
    else:
        # many smaller blocks kept in a list: the loop's count times the block
        turns = [_arith(t) for t in re.findall(r"\brange\(\s*([\d\s*]+)\)", code)]
        most = max((t for t in turns if t is not None), default=0.0)
        kept = "append(" in code or re.search(r"\[[^\]]*\bfor\b[^\]]*\brange\(", code)
        if largest and most and largest * most >= _FILL_BYTES and kept:
            detail = "memory loop"
            out.append(ProcessEffect(op="fill", unbounded=True, detail=detail, span=sp))
    if re.search(r"while\s+(True|1)\s*:[^\n]*\n?\s*\w+\.append\(", code):
        out.append(ProcessEffect(op="fill", unbounded=True, detail="memory loop", span=sp))
    for m in _URL_IN_CODE.finditer(code if _NET_CALL.search(code) else ""):
        host = host_of(m.group(1))
        upload = bool(_CODE_UPLOAD_RE.search(code))
        if not upload:
            r._release_url(cmd, m.group(1), out)  # one release of the package under repair
        # code that reads a file and sends data out sends that file
        sent = next((e.path for e in out if isinstance(e, FileEffect) and e.op == "read"), None)
        out.append(
            NetworkEffect(
                op="upload" if upload else "fetch",
                host=host,
                host_class=host_class(host),
                url=m.group(1),
                detail=("file:" + sent) if upload and sent else "data" if upload else "",
                span=sp,
                via=via,
            )
        )
    if _BIND_RE.search(code) and _SHELL_SPAWN_RE.search(code):
        # a socket bound and listened on, with a shell behind it: a bind shell
        out.append(NetworkEffect(op="listen", host_class="local", detail="shell", span=sp))
    for m in _CONNECT_RE.finditer(code):
        host = re.sub(r":\d+$", "", m.group(1))  # ``host:port`` (Go's Dial, Perl's PeerAddr)
        if re.fullmatch(r"[\d.]+|[\w-]+(\.[\w-]+)+|localhost", host):
            out.append(NetworkEffect(op="connect", host=host, host_class=host_class(host), span=sp))
    if re.search(
        r"(print|dict|json\.dumps|str)\(\s*os\.environ\s*\)|os\.environ\.items\(\)|"
        r"process\.env\)|%ENV|\bENV\.(?:to_h|to_a|each|inspect|keys|map|select)\b|"
        r"\b(?:puts|p|pp)\s+ENV\b(?!\s*[\[.])",
        code,
    ):  # fmt: skip (Ruby's ENV too)
        out.append(EnvRead(op="dump", span=sp, via=via))
    secrets = tuple(
        n
        for n in re.findall(r"""(?:environ(?:\.get)?[\[(]|getenv\()\s*['"](\w+)['"]""", code)
        if _SECRET_RE.search(n)
    )
    if secrets:
        out.append(EnvRead(op="secret", names=secrets, span=sp, via=via))
    if unresolved:
        detail = "writes a computed path (" + ", ".join(sorted(set(unresolved))) + ")"
        out.append(UnknownEffect(op="code-write", detail=detail, span=sp, via=via))
    # a credential file the code names is read by it, whatever call takes the name
    r.read_named_credentials(cmd, out, (m.group(2) for m in _CODE_LITERAL_RE.finditer(code)))
    return list(dict.fromkeys(out))  # a loop and a call may both name the same change


def _shown_effect(e: Effect) -> Effect:
    """``e`` with the internal marker of every text field (and tuple of texts) made printable;
    ``e`` itself when none has one (the common case: only the checks, no copy)."""
    changes: dict[str, Any] = {}
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, str):
            if MARK in v:
                changes[f.name] = shown(v)
        elif isinstance(v, tuple) and any(isinstance(x, str) and MARK in x for x in v):
            changes[f.name] = tuple([shown(x) if isinstance(x, str) else x for x in v])
    return replace(e, **changes) if changes else e
