"""Matching a policy's rules against resolved commands: predicates, views, candidates.

``RuleMatcher`` is a policy's rules compiled under one ``AnalyzerConfig``, with its candidate
rules indexed by command name and shape when it is built. For each command the resolver produced
it takes the candidates, checks them on a ``CommandView`` (lazily computed facts: subcommand,
canonical flags, positionals, files written, path predicates) and reports ``RuleHit``s; the
engine turns hits into findings. A command whose flags are known only at run time is matched
once more with any flag possible (``_WildView``); a rule that matches only then is a hit with
``flags_unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .config import AnalyzerConfig
from .effects import Effect, FileEffect, PathClassifier, host_class, is_device, url_hosts
from .ir import Span
from .policy import Policy, Resolution, Rule
from .resolve import DYN, Cmd, abspath, decoded_literal
from .vocabulary import (
    ACTION_RANK,
    EFFECT_FIELDS,
    EFFECT_OPS,
    SEVERITY_RANK,
    command_name_glob,
)

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_PATCH_URL_RE = re.compile(
    r"(github\.com/[^/]+/[^/]+/(commit|pull|compare)/|\.(patch|diff)(\?|$)|patch-diff\.githubuser"
    r"content|api\.github\.com/repos/[^/]+/[^/]+/(commits|pulls|compare)|gitlab\.com/.+/-/(commit|"
    r"merge_requests)/|bitbucket\.org/.+/(commits|pull-requests)/)"
)
_VCS_URL_RE = re.compile(
    r"^(github|gitlab|bitbucket|gist):|^(git\+|hg\+|svn\+|bzr\+)|^(https?|ftp)://|^git://|^git@|\.git(@|#|$)|^[\w.-]+/[\w.-]+#"
)
_KNOWN_DIRS = frozenset(
    [
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib64",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",  # noqa: S108
        "/usr",
        "/var",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/share",
        "/var/log",
        "/var/lib",
        "/var/tmp",  # noqa: S108
    ]
)
_CHMOD_OPTS = frozenset(
    {"-R", "-c", "-f", "-v", "-Rf", "-Rv", "-fR", "-vR", "-h", "-H", "-L", "-P"}
)
_HASH_RE = re.compile(r"^[0-9a-f]{7,40}$")
_REMOTE_RE = re.compile(
    r"^(origin|upstream|remotes?|refs/remotes|refs/pull|refs/tags)/|^FETCH_HEAD|@\{(u|upstream|"
    r"push)\}|^refs/(heads|remotes|pull)/"
)
_HEADISH_RE = re.compile(r"^(HEAD|@)?([~^][0-9]*)*$")
_SETUID_RE = re.compile(r"^([ugoa]*\+[rwxXt]*s|[0-7]?[2-7][0-7]{3})$")


class PathContext(PathClassifier):
    """The analyzer's path classes (``PathClassifier``: one place for workspace, temp and class
    predicates) plus the policy's flag tables, built once per (policy, config)."""

    def __init__(self, res: Resolution, cfg: AnalyzerConfig) -> None:
        super().__init__(res, cfg)
        self.res = res
        # flag tables (aliases, options taking a value) and the options taking a value before a
        # subcommand, by command (``git``) or command and subcommand (``git push``)
        self.flag_tables = {
            key: (table.get("aliases", {}), frozenset(table.get("with_value", ())))
            for key, table in res.flags.items()
        }
        self.sub_values = {
            name: frozenset(spec.get("with_value", ())) for name, spec in res.subcommands.items()
        }

    def flag_token(self, key: str, a: str) -> tuple[tuple[str, ...], bool]:
        """What option token ``a`` (``-rf``, ``--force``, ``--out=x``) means for ``key``:
        (canonical flags, takes the next argument)."""
        aliases, with_value = self.flag_tables.get(key, _NO_FLAGS)
        if a.startswith("--"):
            nm, eq, _ = a.partition("=")
            return (aliases.get(nm, nm),), nm in with_value and not eq
        out: list[str] = []
        for j, ch in enumerate(a[1:], 1):
            f = "-" + ch
            out.append(aliases.get(f, f))
            if f in with_value:
                return tuple(out), j == len(a) - 1
        return tuple(out), False

    def sub_with_value(self, name: str) -> frozenset[str] | None:
        """Options taking a value before the subcommand, or None: not a subcommand command."""
        return self.sub_values.get(name)


_NO_FLAGS: tuple[dict[str, str], frozenset[str]] = ({}, frozenset())


class CommandView:
    """Lazily computed facts about one resolved command, for rule matching."""

    __slots__ = ("_flags", "_paths", "_sub", "_writes", "cmd", "pc", "res")
    wild = False  # see _WildView

    def __init__(self, cmd: Cmd, res: Resolution, pc: PathContext) -> None:
        self.cmd = cmd
        self.res = res
        self.pc = pc
        self._sub: tuple[str, int] | None = None
        self._flags: dict[str, tuple[frozenset[str], list[str]]] = {}
        self._writes: list[tuple[str, str | None, str, str | None]] | None = None
        self._paths: dict[str, str | None] = {}

    # structure ------------------------------------------------------------------------------
    def sub(self) -> tuple[str, int]:
        """(subcommand, index after it) for commands with subcommands (git push, docker run)."""
        if self._sub is None:
            argv = self.cmd.argv
            wv = self.pc.sub_with_value(argv[0] if argv else "")
            if wv is None:
                self._sub = ("", 1)
            else:
                i = 1
                while i < len(argv):
                    a = argv[i]
                    if a in wv:
                        i += 2
                        continue
                    if a.startswith("-"):
                        i += 1
                        continue
                    break
                self._sub = (argv[i], i + 1) if i < len(argv) else ("", 1)
        return self._sub

    def flags(self, key: str) -> tuple[frozenset[str], list[str]]:
        got = self._flags.get(key)
        if got is not None:
            return got
        flag_token = self.pc.flag_token
        s = self._sub
        start = (s if s is not None else self.sub())[1]
        args = self.cmd.argv[start:]
        out: set[str] = set()
        pos: list[str] = []
        i = 0
        n = len(args)
        dd = False
        while i < n:
            a = args[i]
            i += 1
            if dd or len(a) < 2 or a[0] != "-":
                pos.append(a)
                continue
            if a == "--":
                dd = True
                continue
            names, takes_value = flag_token(key, a)
            out.update(names)
            if takes_value:
                i += 1
        got = (frozenset(out), pos)
        self._flags[key] = got
        return got

    def flag_key(self) -> str:
        argv = self.cmd.argv
        if not argv:
            return ""
        s = self._sub
        sub = (s if s is not None else self.sub())[0]
        if sub:
            k = f"{argv[0]} {sub}"
            if k in self.res.flags:
                return k
        return argv[0]

    def positionals(self) -> list[str]:
        return self.flags(self.flag_key())[1]

    def path(self, raw: str) -> str | None:
        # several rules ask about the same argument: resolve each raw string once per command
        paths = self._paths
        if raw in paths:
            return paths[raw]
        orig = raw
        if "@" in raw:  # curl -d @file, -F field=@file
            head, _, tail = raw.partition("@")
            if tail[:1] in ("/", "~") and (not head or head.endswith("=")):
                raw = tail
        p = paths[orig] = abspath(raw, self.cmd.cwd, self.pc.cfg.home)
        return p

    # predicates ----------------------------------------------------------------------------
    def pred(self, name: str, raw: str) -> bool:
        f = _RAW_PREDS.get(name)
        if f is not None:
            return f(raw)
        p = self.path(raw)
        if p is None:
            return False
        g = _PATH_PRED_FNS.get(name)
        if g is not None:
            return g(self.pc, p, raw)
        return False

    def any_pred(self, preds: list[str], raw: str) -> bool:
        return any(self.pred(p, raw) for p in preds)

    def any_arg(self, test: Callable[[CommandView, str], bool], args: Iterable[str]) -> bool:
        for a in args:  # noqa: SIM110 - a plain loop beats any() over a generator here
            if test(self, a):
                return True
        return False

    # writes ----------------------------------------------------------------------------------
    def writes(self) -> list[tuple[str, str | None, str, str | None]]:
        """(mode, abs path, raw target, content) for every file this command writes."""
        if self._writes is not None:
            return self._writes
        cmd = self.cmd
        out: list[tuple[str, str | None, str, str | None]] = []
        argv = cmd.argv
        name = argv[0] if argv else ""
        content: str | None = None
        if not argv or name in (":", "true"):
            content = ""
        elif name in ("cat", "tee") and cmd.stdin_body is not None:
            content = cmd.stdin_body
        elif name in ("echo", "printf"):
            content = " ".join(a for a in argv[1:] if not a.startswith("-"))
        elif name == "cat" and len(argv) == 2 and argv[1] == "/dev/null":
            content = ""
        for r in cmd.redirects:
            if r.path == "/dev/null":
                continue  # output thrown away (``2>/dev/null``): nothing is written anywhere
            if r.op in (">", ">|", "&>", ">&") and r.path is not None:
                out.append(("truncate", r.path, r.raw, content))
            elif r.op in (">>", "&>>") and r.path is not None:
                out.append(("append", r.path, r.raw, content))
        if not argv:
            self._writes = out
            return out
        if name == "tee":
            flags, pos = self.flags("tee")
            mode = "append" if "append" in flags or "-a" in flags else "truncate"
            out.extend((mode, self.path(a), a, cmd.stdin_body) for a in pos)
        elif name in ("sed", "perl", "ruby") and any(
            a.startswith("-i")
            or a == "--in-place"
            or (
                (a[:1] == "-" and a[1:2] != "-" and "i" in a and name != "sed")
                or a in ("-Ei", "-ri")
            )
            for a in argv[1:]
        ):
            script_parts: list[str] = []
            files: list[str] = []
            i = 1
            has_e = any(a in ("-e", "--expression") for a in argv[1:])
            while i < len(argv):
                a = argv[i]
                if a in ("-e", "--expression", "-f"):
                    if i + 1 < len(argv):
                        script_parts.append(argv[i + 1])
                    i += 2
                    continue
                if a.startswith("-") and len(a) > 1:
                    if name != "sed" and a.endswith("e") and i + 1 < len(argv):  # perl -pie
                        script_parts.append(argv[i + 1])
                        i += 2
                        has_e = True
                        continue
                    i += 1
                    continue
                if not has_e and not script_parts:
                    script_parts.append(a)
                else:
                    files.append(a)
                i += 1
            script = "\n".join(script_parts)
            out.extend(("edit", self.path(f), f, script) for f in files)
        elif name in ("cp", "install", "ln"):
            _, pos = self.flags(name)
            if len(pos) >= 2:
                src = "" if pos[0] == "/dev/null" else None
                out.append(("truncate", self.path(pos[-1]), pos[-1], src))
        elif name == "mv":
            _, pos = self.flags("mv")
            if len(pos) >= 2:
                out.extend(("move-from", self.path(a), a, None) for a in pos[:-1])
                out.append(("move-to", self.path(pos[-1]), pos[-1], None))
        elif name in ("rm", "unlink", "shred", "rmdir", "srm"):
            _, pos = self.flags(name)
            out.extend(("delete", self.path(a), a, None) for a in pos)
        elif name == "truncate":
            _, pos = self.flags("truncate")
            out.extend(("truncate", self.path(a), a, "") for a in pos)
        elif name == "chmod":
            # a mode may look like a flag (-x, -w): only the real options are skipped
            pos = [a for a in argv[1:] if a not in _CHMOD_OPTS and not a.startswith("--")]
            if len(pos) >= 2:
                out.extend(("chmod", self.path(a), a, pos[0]) for a in pos[1:])
        elif name == "dd":
            for a in argv[1:]:
                if a.startswith("of="):
                    out.append(("truncate", self.path(a[3:]), a[3:], None))
        elif name == "find":
            if _FIND_WRITES.isdisjoint(argv):  # most finds: no output-file action at all
                self._writes = out
                return out
            for i, a in enumerate(argv[:-1]):
                if a in _FIND_WRITES:
                    out.append(("truncate", self.path(argv[i + 1]), argv[i + 1], None))
        elif name == "git":
            if self.sub()[0] == "rm":
                out.extend(("delete", self.path(a), a, None) for a in self.flags("git rm")[1])
            for i, a in enumerate(argv):
                if a.startswith("--output="):
                    out.append(("truncate", self.path(a[9:]), a[9:], None))
                elif a == "--output" and i + 1 < len(argv):
                    out.append(("truncate", self.path(argv[i + 1]), argv[i + 1], None))
        self._writes = out
        return out


_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})


def _dynamic_flag_args(argv: tuple[str, ...]) -> tuple[bool, bool]:
    """(an argument is a flag with a value known only at run time, like ``-$x``; an argument
    is wholly such a value, like ``$F``, which may be a flag too)."""
    flag = bare = False
    for a in argv[1:]:
        if DYN in a:
            if a[0] == "-":
                flag = True
            elif a.startswith(DYN):
                bare = True
    return flag, bare


class _WildView(CommandView):
    """The same command with its run-time flags unknown, so any flag may be among them.

    ``rm -$x /`` (or ``rm $F /`` with ``F=-rf`` set in an earlier step) is ``rm -rf /`` for
    some values. Rule checks on this view treat ``flags_any``/``flags_all`` as satisfiable,
    and a whole-word run-time value (``$F``) as a flag rather than a path when the command has
    literal paths too; a rule that matches only here is a ``dynamic-flags`` review finding."""

    __slots__ = ("_bare_as_flags",)
    wild = True

    def __init__(self, cmd: Cmd, res: Resolution, pc: PathContext, bare_as_flags: bool) -> None:
        super().__init__(cmd, res, pc)
        self._bare_as_flags = bare_as_flags

    def flags(self, key: str) -> tuple[frozenset[str], list[str]]:
        known, pos = CommandView.flags(self, key)
        if self._bare_as_flags:
            pos = [a for a in pos if not a.startswith(DYN)]
        return known, pos


# A predicate on an argument's absolute path (and its raw text): (context, path, raw) -> holds.
PathPredicate = Callable[[PathContext, str, str], bool]


def _ref_pred(name: str, raw: str) -> bool:
    a = raw.lstrip("^")
    if name == "force-refspec":
        return raw.startswith("+")
    if name == "delete-refspec":
        return raw.startswith(":") and len(raw) > 1
    if name == "rev-path":
        if ":" not in a or a.startswith(":") or "://" in a:
            return False
        rev = a.split(":", 1)[0]
        return not _HEADISH_RE.match(rev)
    for part in re.split(r"\.\.\.?", a):
        part = part.split(":", 1)[0]
        base = re.sub(r"([~^][0-9]*)+$", "", part)
        if name == "remote-ref" and _REMOTE_RE.search(part):
            return True
        if name == "commit-hash" and _HASH_RE.match(base):
            return True
    return False


def _outside_workspace_file(pc: PathContext, p: str, raw: str) -> bool:
    # rm without -r cannot remove a directory: /, ~, /etc and dir/ are no-ops for it
    return (
        pc.outside(p)
        and not raw.endswith("/")
        and p not in _KNOWN_DIRS
        and p != (pc.cfg.home.rstrip("/") or "/")
    )


def _rel_pred(kind: str) -> PathPredicate:
    def check(pc: PathContext, p: str, raw: str) -> bool:
        rel = pc.rel(p)
        if rel is None or rel == "":
            return False
        if kind == "test-path":
            return pc.is_test(rel)
        rx = pc.config_rx if kind == "test-config" else pc.shared_rx
        return bool(rx and rx.match(rel))

    return check


# Predicates on the raw argument text, then predicates on its absolute path (``CommandView.pred``).
_RAW_PREDS: dict[str, Callable[[str], bool]] = {
    "any": lambda raw: True,
    "dynamic": lambda raw: DYN in raw,
    "glob": lambda raw: any(c in raw for c in "*?["),
    "url": lambda raw: bool(_URL_RE.match(raw)),
    "upstream-patch-url": lambda raw: bool(_PATCH_URL_RE.search(raw)),
    "vcs-url": lambda raw: bool(_VCS_URL_RE.search(raw)),
    "remote-ref": lambda raw: _ref_pred("remote-ref", raw),
    "commit-hash": lambda raw: _ref_pred("commit-hash", raw),
    "rev-path": lambda raw: _ref_pred("rev-path", raw),
    "force-refspec": lambda raw: _ref_pred("force-refspec", raw),
    "delete-refspec": lambda raw: _ref_pred("delete-refspec", raw),
    "setuid-mode": lambda raw: bool(_SETUID_RE.match(raw)),
}
_PATH_PRED_FNS: dict[str, PathPredicate] = {
    "outside-workspace": lambda pc, p, raw: pc.outside(p),
    "outside-scratch": lambda pc, p, raw: pc.outside(p) and p not in pc.temps,
    "outside-workspace-file": _outside_workspace_file,
    "workspace-root": lambda pc, p, raw: pc.workspace_root(p),
    "in-workspace": lambda pc, p, raw: pc.rel(p) is not None,
    "temp-path": lambda pc, p, raw: pc.in_temp(p),
    "root": lambda pc, p, raw: p == "/",
    "device": lambda pc, p, raw: is_device(p),
    "dev-null": lambda pc, p, raw: p == "/dev/null",
    "dev-tcp": lambda pc, p, raw: (
        p.startswith(("/dev/tcp/", "/dev/udp/")) and not _local_dev_tcp(p)
    ),
    "credential-file": lambda pc, p, raw: pc.credential(p),
    "persistence-file": lambda pc, p, raw: bool(pc.persist_rx and pc.persist_rx.match(p)),
    "git-dir": lambda pc, p, raw: p.endswith("/.git") or "/.git/" in p,
    "test-path": _rel_pred("test-path"),
    "test-config": _rel_pred("test-config"),
    "shared-config": _rel_pred("shared-config"),
}


Check = Callable[[CommandView], bool]


def _pred_test(preds: list[str]) -> Callable[[CommandView, str], bool]:
    """``lambda v, raw: v.any_pred(preds, raw)``, with the predicate lookups done once."""
    tests: list[Callable[[CommandView, str], bool]] = []
    for name in preds:
        f = _RAW_PREDS.get(name)
        g = _PATH_PRED_FNS.get(name)
        if f is not None:

            def raw_test(v: CommandView, raw: str, f: Callable[[str], bool] = f) -> bool:
                return f(raw)

            tests.append(raw_test)
        elif g is not None:

            def path_test(v: CommandView, raw: str, g: PathPredicate = g) -> bool:
                p = v.path(raw)
                return p is not None and g(v.pc, p, raw)

            tests.append(path_test)
        # an unknown name never holds (``CommandView.pred``); validation rejects it anyway
    if len(tests) == 1:
        return tests[0]

    def any_test(v: CommandView, raw: str) -> bool:
        for t in tests:  # noqa: SIM110 - a plain loop beats any() over a generator here
            if t(v, raw):
                return True
        return False

    return any_test


def compile_rule(rule: Rule) -> tuple[Check, ...]:
    """The rule's match as a tuple of checks, cheapest and most selective first."""
    m = rule.match
    checks: list[Check] = []
    subs = m.get("subcommand")
    if subs is not None:
        singles = frozenset(x for x in subs if " " not in x)
        pairs = frozenset(tuple(x.split(" ", 1)) for x in subs if " " in x)

        def sub_ok(v: CommandView) -> bool:
            sub, nxt = v.sub()
            if sub in singles:
                return True
            argv = v.cmd.argv
            return bool(pairs) and nxt < len(argv) and (sub, argv[nxt]) in pairs

        checks.append(sub_ok)
    if "argv_regex" in m:
        arx = re.compile(m["argv_regex"])
        checks.append(lambda v: bool(arx.search(" ".join(v.cmd.argv))))
    if "flags_any" in m or "flags_all" in m or "flags_none" in m:
        fa = frozenset(m.get("flags_any", ()))
        fl = frozenset(m.get("flags_all", ()))
        fn = frozenset(m.get("flags_none", ()))

        def flags_ok(v: CommandView) -> bool:
            flags = v.flags(v.flag_key())[0]
            if v.wild:  # the unknown flags may hold any of fa and all of fl
                return flags.isdisjoint(fn)
            return (
                (not fa or not flags.isdisjoint(fa))
                and flags.issuperset(fl)
                and flags.isdisjoint(fn)
            )

        checks.append(flags_ok)
    if "arg_regex" in m:
        arg_rx = re.compile(m["arg_regex"])
        rx_search = arg_rx.search
        shortest = _min_width(arg_rx)  # no argument shorter than this can match

        def arg_ok(v: CommandView) -> bool:
            args = v.cmd.argv[1:]
            if shortest and max(map(len, args), default=0) < shortest:
                return False
            return any(map(rx_search, args))

        checks.append(arg_ok)
    if "assign_regex" in m:
        srx = re.compile(m["assign_regex"])
        checks.append(lambda v: any(srx.search(f"{k}={val}") for k, val in v.cmd.assigns))
    if "args_any" in m:
        args_test = _pred_test(list(m["args_any"]))

        def args_ok(v: CommandView) -> bool:  # ``v.any_arg(args_test, v.positionals())``
            for a in v.flags(v.flag_key())[1]:  # noqa: SIM110 - a plain loop beats any()
                if args_test(v, a):
                    return True
            return False

        checks.append(args_ok)
    if "option" in m:
        names = list(m["option"]["names"])
        opt_test = _pred_test(list(m["option"].get("is", ["any"])))
        checks.append(lambda v: v.any_arg(opt_test, _option_values(v.cmd.argv, names)))
    if "redirect" in m:
        ops = list(m["redirect"].get("ops", ["any"]))
        redirect_test = _pred_test(list(m["redirect"].get("target", ["any"])))
        checks.append(
            lambda v: any(_op_ok(rr.op, ops) and redirect_test(v, rr.raw) for rr in v.cmd.redirects)
        )
    if "writes" in m:
        w = m["writes"]
        modes = frozenset(w.get("modes", ()))
        write_test = _pred_test(list(w.get("target", ["any"])))
        crx = re.compile(w["content_regex"]) if "content_regex" in w else None
        cmode = w.get("content", "any")

        def writes_ok(v: CommandView) -> bool:
            ws = v._writes  # ``v.writes()``: computed once per view
            if ws is None:
                ws = v.writes()
            for mode, _p, raw, content in ws:
                if modes and mode not in modes:
                    continue
                if cmode == "empty" and content != "":
                    continue
                if cmode == "present" and not content:
                    continue
                if crx is not None and (content is None or not crx.search(content)):
                    continue
                if write_test(v, raw):
                    return True
            return False

        checks.append(writes_ok)
    if "pipeline" in m:
        p = m["pipeline"]
        sinks = p.get("sink_class", [])
        sinks = [sinks] if isinstance(sinks, str) else list(sinks)
        sources = p.get("source_class", [])
        sources = [sources] if isinstance(sources, str) else list(sources)
        stdin_prog = bool(p.get("program_from_stdin"))
        remote = bool(p.get("remote_sink"))
        unless = p.get("not_source_class", [])
        unless = [unless] if isinstance(unless, str) else list(unless)

        def pipe_ok(v: CommandView) -> bool:
            res = v.res
            argv = v.cmd.argv
            if not any(res.in_class(c, argv) for c in sinks):
                return False
            if stdin_prog and not _program_from_stdin(v.cmd, res):
                return False
            if remote and _only_local_hosts(argv):
                return False
            return any(
                res.in_class(c, up)
                and not any(res.in_class(u, up) for u in unless)
                and not (c == "decoders" and _lays_out_text(up))
                for up in v.cmd.upstream
                for c in sources
            )

        checks.append(pipe_ok)
    return tuple(checks)


EffectCheck = Callable[[Effect], bool]


def _classes_test(want: frozenset[str], attr: str, negate: bool) -> EffectCheck:
    def test(e: Effect) -> bool:
        return isinstance(e, FileEffect) and want.isdisjoint(getattr(e, attr)) == negate

    return test


def _bool_test(key: str, value: bool) -> EffectCheck:
    def test(e: Effect) -> bool:
        return bool(getattr(e, key, None)) is value

    return test


def _regex_test(rx: re.Pattern[str], attr: str) -> EffectCheck:
    def test(e: Effect) -> bool:
        return bool(rx.search(getattr(e, attr, None) or ""))

    return test


def _value_test(key: str, allowed: frozenset[str]) -> EffectCheck:
    def test(e: Effect) -> bool:
        return getattr(e, key, None) in allowed

    return test


def compile_effect(spec: dict[str, Any]) -> tuple[frozenset[str], EffectCheck]:
    """An ``effect`` match as (the kinds it applies to, a check on one effect of those kinds)."""
    kind = spec["kind"]
    kinds = frozenset([kind] if isinstance(kind, str) else kind)
    tests: list[EffectCheck] = []
    for key, val in spec.items():
        if key == "kind":
            continue
        shape = EFFECT_FIELDS[key][1]
        if key == "op":
            continue  # RuleMatcher indexes effect rules by (kind, op)
        elif key in ("path_class", "not_path_class", "source_class"):
            attr = "source_classes" if key == "source_class" else "classes"
            tests.append(_classes_test(frozenset(val), attr, key == "not_path_class"))
        elif shape == "bool":
            tests.append(_bool_test(key, bool(val)))
        elif shape == "regex":
            attr = {"content_regex": "content", "path_regex": "path"}.get(key, "detail")
            tests.append(_regex_test(re.compile(val), attr))
        else:
            tests.append(_value_test(key, frozenset(val)))
    checks = tuple(tests)

    def check(e: Effect) -> bool:
        for t in checks:  # noqa: SIM110 - a plain loop beats any() over a generator here
            if not t(e):
                return False
        return True

    return kinds, check


def _min_width(rx: re.Pattern[str]) -> int:
    """The fewest characters any match of ``rx`` has (0 when unknown)."""
    try:
        import re._parser as sre_parse  # private module: imported defensively

        lo = sre_parse.parse(rx.pattern, rx.flags).getwidth()[0]
    except Exception:  # any failure just disables the shortcut
        return 0
    return lo if isinstance(lo, int) and 0 < lo < 1_000_000 else 0


def _op_ok(op: str, ops: list[str]) -> bool:
    if "any" in ops:
        return True
    if op in (">", ">|", "&>", ">&"):
        return "write" in ops
    if op in (">>", "&>>"):
        return "append" in ops
    if op in ("<", "<>"):
        return "read" in ops
    return False


def _option_values(argv: tuple[str, ...], names: list[str]) -> list[str]:
    out: list[str] = []
    for i, a in enumerate(argv[1:], 1):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "="):
                out.append(a[len(n) + 1 :])
            elif len(n) == 2 and n[0] == "-" and a.startswith(n) and len(a) > 2:
                out.append(a[2:])
    return out


def _decoded_program(cmd: Cmd, program: str) -> bool:
    """Is this program text what a decoder feeding the command printed, though the resolver
    could decode it (``eval "$(echo cm0= | base64 -d)"``)? Hiding it is the point."""
    up = cmd.upstream
    return any(decoded_literal(up[k], up[k + 1]) == program for k in range(len(up) - 1))


def _only_local_hosts(argv: Sequence[str]) -> bool:
    """Every host the sink names (URLs; nc's, ncat's or telnet's host operand) is this machine, and
    it names at least one: data sent to a local server has not left the machine."""
    hosts = [h for a in argv[1:] for h in url_hosts(a)]
    if not hosts and argv and argv[0] in ("nc", "ncat", "netcat", "telnet"):
        hosts = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()][:1]
    return bool(hosts) and all(host_class(h) == "local" for h in hosts)


# escapes that spell characters by number (``\x72``, ``\162``, ``\u0072``): what hides a word
_NUMERIC_ESCAPE = re.compile(r"\\(?:x[0-9A-Fa-f]|u[0-9A-Fa-f]|U[0-9A-Fa-f]|0?[0-7]{2,3})")


def _lays_out_text(argv: tuple[str, ...]) -> bool:
    """A ``printf``/``echo -e`` whose escapes only lay out text (``\n``, ``\t``) decodes
    nothing: its words are read as they are, so it is not a decoder."""
    return (
        bool(argv)
        and argv[0] in ("printf", "echo")
        and not any(_NUMERIC_ESCAPE.search(a) for a in argv[1:])
    )


def _local_dev_tcp(path: str) -> bool:
    """``/dev/tcp/127.0.0.1/6379``: a connection to this machine (a local server), not out."""
    host = path.split("/")[3] if path.count("/") >= 4 else ""
    return host == "localhost" or host.startswith("127.") or host in ("::1", "[::1]")


def _program_from_stdin(cmd: Cmd, res: Resolution) -> bool:
    """Does this shell/interpreter take its program from a producer rather than a file?"""
    argv = cmd.argv
    name = argv[0]
    if name in ("eval",):
        return any(DYN in a for a in argv[1:]) or _decoded_program(cmd, " ".join(argv[1:]))
    code_flags = res.code_flags
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-", "/dev/stdin") or DYN in a:
            return True
        if a in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if a.startswith(("-", "+")):
            if (name in res.interpreters and a in code_flags) or (
                name in res.shells and not a.startswith("--") and "c" in a
            ):
                # sh -c "$(curl ...)": the program is whatever the producer printed
                return i + 1 < len(argv) and (
                    DYN in argv[i + 1] or _decoded_program(cmd, argv[i + 1])
                )
            i += 1
            continue
        return False
    return True


_WRITERS = frozenset(
    {
        "tee",
        "sed",
        "perl",
        "ruby",
        "cp",
        "install",
        "ln",
        "mv",
        "rm",
        "unlink",
        "shred",
        "rmdir",
        "srm",
        "truncate",
        "chmod",
        "dd",
        "find",
        "git",
    }
)
_PATH_PREDS = frozenset(
    {
        "outside-workspace",
        "outside-workspace-file",
        "outside-scratch",
        "workspace-root",
        "in-workspace",
        "temp-path",
        "test-path",
        "test-config",
        "shared-config",
        "device",
        "dev-null",
        "dev-tcp",
        "credential-file",
        "persistence-file",
        "git-dir",
        "root",
    }
)


# A command's shape (``_cmd_bits``): it has upstream producers, redirects, assignments, arguments,
# a path-like argument; and, for the candidate index, its name is one that writes files (_WR).
_UP, _RD, _AS, _ARG, _PATH, _WR = 1, 2, 4, 8, 16, 32
_SHAPES = 64  # every combination of the bits above


@dataclass(frozen=True, slots=True)
class _Needs:
    """Cheap necessary conditions for a rule without ``commands`` (``RuleMatcher`` indexes them
    by shape when it is built)."""

    bits: int
    sinks: tuple[str, ...] | None  # pipeline sink classes: the command name must be in one
    writer: bool  # redirects, or a command that writes files

    def ok(self, name: str, bits: int, res: Resolution) -> bool:
        shape = bits | _WR if name in _WRITERS else bits
        return self.shape_ok(shape) and self.sinks_ok(name, res)

    def shape_ok(self, shape: int) -> bool:
        if self.bits & shape != self.bits:
            return False
        return not (self.writer and not shape & (_RD | _WR))

    def sinks_ok(self, name: str, res: Resolution) -> bool:
        return self.sinks is None or any(_name_in_class(res, c, name) for c in self.sinks)


def _name_in_class(res: Resolution, cls: str, name: str) -> bool:
    """Necessary for ``res.in_class(cls, argv)`` with ``argv[0] == name`` (flags not looked at)."""
    if cls == "any" or name in res.class_index.get(cls, {}):
        return True
    return any(
        e.name == name or command_name_glob(e.name, name) for e in res.class_globs.get(cls, ())
    )


def _needs(rule: Rule, res: Resolution) -> _Needs:
    m = rule.match
    bits = 0
    sinks: tuple[str, ...] | None = None
    if "pipeline" in m:
        bits |= _UP
        classes = m["pipeline"].get("sink_class", [])
        sinks = (classes,) if isinstance(classes, str) else tuple(classes)
    if "redirect" in m:
        bits |= _RD
    if "assign_regex" in m:
        bits |= _AS
    if "arg_regex" in m:
        bits |= _ARG
    if "args_any" in m and all(p in _PATH_PREDS for p in m["args_any"]):
        bits |= _PATH
    return _Needs(bits, sinks, "writes" in m)


def _cmd_bits(cmd: Cmd) -> int:
    b = 0
    if cmd.upstream:
        b |= _UP
    if cmd.redirects:
        b |= _RD
    if cmd.assigns:
        b |= _AS
    argv = cmd.argv
    if len(argv) > 1:
        b |= _ARG
        for a in argv[1:]:
            if "/" in a or a[:1] == "~":
                b |= _PATH
                break
    return b


class _Cand(NamedTuple):
    """A candidate rule and its compiled checks. ``writes``: for a rule with a ``writes`` match,
    the modes it looks at (empty: any); such a rule is skipped at once when the command writes
    nothing (most commands) or only in other modes, since then its ``writes`` check cannot hold."""

    rule: Rule
    checks: tuple[Check, ...]
    writes: frozenset[str] | None


class _Names(NamedTuple):
    """Command names: these, and any name starting with one of the prefixes (``python3.*``)."""

    exact: frozenset[str]
    prefixes: tuple[str, ...]


_NOTHING: frozenset[str] = frozenset()

# ``rm --help``, ``git --version``: asking a command about itself runs nothing risky
_SELF_QUERY = frozenset({"--help", "--version", "-h", "-V", "help"})


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A rule that matches a resolved command. With ``flags_unknown`` it matches only for some
    value of flags known at run time (``rm -$x /``): the engine reports a dynamic-flags review."""

    rule: Rule
    cmd: Cmd
    flags_unknown: bool = False


class RuleMatcher:
    """A policy's rules compiled under one config, with the candidate rules of a command indexed
    by its name (the rules naming it) and its shape (the generic rules), both built here."""

    def __init__(self, policy: Policy, config: AnalyzerConfig) -> None:
        self.policy = policy
        self.res = policy.resolution
        self.pc = PathContext(self.res, config)
        self.generic = tuple((r, _needs(r, self.res)) for r in policy.generic)
        self.checks = {r.id: compile_rule(r) for r in policy.rules if "effect" not in r.match}
        # effect rules by (kind, op), in policy order: an effect meets only its candidates
        self.effect_index: dict[tuple[str, str], list[tuple[Rule, EffectCheck]]] = {}
        for r in policy.effect_rules:
            kinds, check = compile_effect(r.match["effect"])
            ops = r.match["effect"].get("op")
            for kind in kinds:
                for op in ops if ops is not None else EFFECT_OPS[kind]:
                    self.effect_index.setdefault((kind, op), []).append((r, check))
        # the rules naming a command: exact names in a dict (``mkfs.*`` too, as
        # ``Policy.rules_for`` looks it up), then the ``mkfs.*`` style prefixes in policy order
        self.named: dict[str, tuple[_Cand, ...]] = {
            name: tuple(self._cand(r) for r in rules) for name, rules in policy.by_name.items()
        }
        self.name_globs = tuple(
            (name[:-1], cands) for name, cands in self.named.items() if name.endswith("*")
        )
        self.glob_prefixes = tuple(prefix for prefix, _ in self.name_globs)
        # the generic rules (no ``commands``) a shape admits, by shape, each with the names of
        # its pipeline sink classes (None: any name), which the command's name must be among
        self.generic_by_shape = tuple(
            tuple(
                (self._cand(r), self._sink_names(needs))
                for r, needs in self.generic
                if needs.shape_ok(shape)
            )
            for shape in range(_SHAPES)
        )

    def _sink_names(self, needs: _Needs) -> _Names | None:
        """The names in ``needs.sinks`` classes (``_name_in_class`` for every name at once)."""
        if needs.sinks is None or "any" in needs.sinks:
            return None
        exact: set[str] = set()
        prefixes: list[str] = []
        for cls in needs.sinks:
            exact.update(self.res.class_index.get(cls, {}))
            for e in self.res.class_globs.get(cls, ()):
                exact.add(e.name)
                prefixes.append(e.name[:-1])
        return _Names(frozenset(exact), tuple(prefixes))

    def _cand(self, rule: Rule) -> _Cand:
        w = rule.match.get("writes")
        modes = None if w is None else frozenset(w.get("modes", ()))
        return _Cand(rule, self.checks[rule.id], modes)

    def match_effects(self, effects: Sequence[Effect]) -> list[tuple[Rule, Effect]]:
        """Every (effect rule, effect) that matches, in effect order then policy order."""
        hits: list[tuple[Rule, Effect]] = []
        index = self.effect_index
        if not index:
            return hits
        for e in effects:
            for rule, check in index.get((e.kind, e.op), ()):
                if check(e):
                    hits.append((rule, e))
        return hits

    def match(self, cmds: list[Cmd], seen: set[tuple[str, Span]]) -> list[RuleHit]:
        """Every rule hit over the commands, in order. ``seen`` holds the (rule id, span) pairs
        already reported (the engine's, shared with its signals): a pair is reported once, and
        the pairs of these hits are added (``analyzer.dynamic-flags`` for flags-unknown ones)."""
        hits: list[RuleHit] = []
        res = self.res
        pc = self.pc
        for cmd in cmds:
            argv = cmd.argv
            name = argv[0] if argv else ""
            self_query = len(argv) == 2 and argv[1] in _SELF_QUERY
            cands = self.candidates(name, _cmd_bits(cmd), self_query)
            if not cands:
                continue
            view = CommandView(cmd, res, pc)
            present: frozenset[str] | None = None  # modes of the files this command writes
            for rule, checks, writes in cands:
                if writes is not None:
                    if present is None:
                        ws = view.writes()
                        present = frozenset([w[0] for w in ws]) if ws else _NOTHING
                    if not present or (writes and writes.isdisjoint(present)):
                        continue
                for check in checks:
                    if not check(view):
                        break
                else:
                    fkey = (rule.id, cmd.span)
                    if fkey in seen:
                        continue
                    seen.add(fkey)
                    hits.append(RuleHit(rule, cmd))
            if DYN in "".join(argv):
                self._dynamic_flags(cmd, cands, hits, seen)
        return hits

    def _dynamic_flags(
        self,
        cmd: Cmd,
        cands: list[_Cand],
        hits: list[RuleHit],
        seen: set[tuple[str, Span]],
    ) -> None:
        """Fail closed on flags known only at run time: the strictest rule the command would
        match with some value of them (and does not match as read) becomes one hit."""
        flag, bare = _dynamic_flag_args(cmd.argv)
        if not flag and not bare:
            return
        bare_as_flags = bare and not flag
        view = _WildView(cmd, self.res, self.pc, bare_as_flags)
        # ``rm $f`` alone is a file loop; ``rm $F /`` may be ``rm -rf /``
        if bare_as_flags and all(DYN in a for a in view.positionals()):
            return
        worst: Rule | None = None
        for rule, checks, _ in cands:  # write rules too: the view works out its own writes
            if (rule.id, cmd.span) in seen or (
                "flags_any" not in rule.match and "flags_all" not in rule.match
            ):
                continue  # only rules whose flags decide can newly match here
            if all(check(view) for check in checks) and (
                worst is None
                or (ACTION_RANK[rule.action], SEVERITY_RANK[rule.severity])
                > (ACTION_RANK[worst.action], SEVERITY_RANK[worst.severity])
            ):
                worst = rule
        if worst is None:
            return
        key = ("analyzer.dynamic-flags", cmd.span)
        if key in seen:
            return
        seen.add(key)
        hits.append(RuleHit(worst, cmd, flags_unknown=True))

    def candidates(self, name: str, bits: int, not_exec: bool) -> list[_Cand]:
        """The rules worth checking on a command of this name and shape (``_cmd_bits``), in
        policy order: the rules naming it (none when ``not_exec``), then the generic ones."""
        out = list(self.rules_named(name)) if name and not not_exec else []
        for cand, sinks in self.generic_by_shape[bits | _WR if name in _WRITERS else bits]:
            if sinks is None or name in sinks.exact or name.startswith(sinks.prefixes):
                out.append(cand)
        return out

    def rules_named(self, name: str) -> tuple[_Cand, ...]:
        """``Policy.rules_for(name)`` as candidates: by exact name, else the first prefix."""
        got = self.named.get(name)
        if got is not None:
            return got
        if name.startswith(self.glob_prefixes):
            for prefix, cands in self.name_globs:
                if name.startswith(prefix):
                    return cands
        return ()
