"""Policies: versioned, declarative rule sets a safety lead can read and edit (JSON-compatible).

A policy is ``{"slug", "version", "name", "description", "resolution": {...}, "rules": [...]}``.
``resolution`` holds the command knowledge the resolver uses (command classes, wrappers, flag
alias tables, interpreter code patterns, path classes); ``rules`` say what is flagged. Each rule::

    {"id": "fs.delete-outside-workspace", "category": "destructive-fs", "severity": "critical",
     "action": "block", "message": "...", "description": "...",
     "match": {...}, "examples": {"must_match": [...], "must_not_match": [...]}}

``match`` keys (all given keys must hold; a closed set, unknown keys are errors):

- ``commands``: command names (after unwrapping; ``mkfs*`` style trailing ``*`` allowed).
- ``subcommand``: e.g. ``["push"]`` or ``["stash drop"]`` (commands in ``resolution.subcommands``).
- ``flags_any`` / ``flags_all`` / ``flags_none``: canonical flag names from ``resolution.flags``
  (so ``-rf``, ``-r -f``, ``-fr`` and ``--recursive --force`` are all ``recursive`` + ``force``).
- ``args_any``: predicates; some positional argument satisfies one (``vocabulary.PREDICATES``).
- ``arg_regex``: a regex found in some argument; ``argv_regex``: in the space-joined argv.
- ``option``: ``{"names": [...], "is": [predicates]}``: an option's value (``of=X``, ``--output X``,
  ``-fprint X``) satisfies a predicate.
- ``pipeline``: ``{"source_class": [...], "not_source_class": [...], "sink_class": [...],
  "program_from_stdin": bool, "remote_sink": bool}``: this
  command is in a sink class and some command feeding it (pipe, process or command substitution,
  tainted variable) is in a source class (``"any"`` matches every producer); ``remote_sink``:
  not when every host the sink names is this machine (``curl -d @- http://localhost:3000``).
- ``redirect``: ``{"target": [predicates], "ops": ["write"|"append"|"read"|"any"]}``.
- ``writes``: ``{"target": [predicates], "modes": [truncate|append|edit|delete|move-from|move-to|
  chmod], "content_regex": str, "content": "empty"|"present"|"any"}``: files the command writes
  (redirects, tee, sed -i, cp/mv, rm, truncate, dd of=, find -fprint, git --output, chmod).
- ``assign_regex``: a regex found in some ``NAME=value`` assignment.
- ``signal``: an analyzer signal (``unparseable``, ``dynamic-command-name``, ...).
- ``effect``: what a command (or, in a trajectory, a file tool or the final patch) *does*, read
  into typed effects (``effects.py``), not how it is spelled. Alone in its rule's ``match``.
  ``{"kind": "file" | [...], "op": [...], <fields>}``; every field must hold:

  - ``kind``: effect kinds (``vocabulary.EFFECT_OPS``: file, vcs-read, vcs-write,
    package-install, network, process, env-read, test-run, unknown); ``op``: their operations
    (file: read create write append edit truncate delete rename copy restore chmod touch; ...).
  - file effects: ``path_class`` / ``not_path_class`` / ``source_class`` (``PATH_CLASSES``:
    source, test, test-config, shared-config, workspace-root, git-dir, harness, packages,
    scratch, outside, credential, persistence, device, unknown; a path may have several),
    ``origin`` (agent: the agent created it earlier, its own; pre-existing; unknown),
    ``content_known`` (the text written is known), ``content_regex`` (found in it: the new
    content, the added text, the edit script), ``path_regex`` (found in the absolute path),
    ``detail_regex`` (chmod mode, touch options),
    ``recursive``, ``agent_modified`` (restoring a file the agent itself changed),
    ``test_literals`` (an edit special-casing a literal the agent read from a test),
    ``final`` (a change in the trajectory's final patch, C1 ``patch``),
    ``ref_scope`` (restore: head, ancestor, other-refs, commit, remote).
  - vcs-read ``ref_scope``; package-install ``source`` (index, url, vcs, local, editable,
    requirements), ``target_dir``, ``upgrade``, ``pinned``, ``repo_package``,
    ``maybe_repo_package`` (the task names none: the workspace's own name, or a package a
    benchmark's tasks repair); network
    ``host_class`` (local, metadata, remote, unknown); process ``target`` (parent, session,
    all, init, by-name, pid, unknown), ``unbounded``, ``detail_regex``; test-run
    ``selection``.

  Example: "modifies a pre-existing test file with unknown content" is
  ``{"kind": "file", "op": ["write", "copy"], "path_class": ["test"],
  "origin": ["pre-existing", "unknown"], "content_known": false}``.

``examples`` are commands each rule must (not) flag. This module checks only their shape;
``examples.check_examples`` runs them through the analyzer when a policy is published.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .vocabulary import (
    ACTIONS,
    CATEGORIES,
    EFFECT_FIELDS,
    EFFECT_OPS,
    MATCH_KEYS,
    PREDICATES,
    REDIRECT_OPS,
    SEVERITIES,
    SIGNALS,
    WRITE_MODES,
    command_name_glob,
)

_RULE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")
_RESOLUTION_KEYS = {
    "classes",
    "wrappers",
    "subcommands",
    "flags",
    "interpreter_patterns",
    "code_flags",
    "find_filters",
    "paths",
}


class PolicyError(ValueError):
    """Invalid policy; ``errors`` maps a path like ``rules[3].match.flags_any`` to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        first = next(iter(errors.items()), ("policy", ["invalid"]))
        super().__init__(f"{first[0]}: {first[1][0]}" + (" ..." if len(errors) > 1 else ""))


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    category: str
    severity: str
    action: str
    message: str
    match: dict[str, Any]
    description: str = ""
    examples: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "category": self.category,
            "severity": self.severity,
            "action": self.action,
            "message": self.message,
        }
        if self.description:
            d["description"] = self.description
        d["match"] = copy.deepcopy(self.match)
        if self.examples:
            d["examples"] = copy.deepcopy(self.examples)
        return d


@dataclass(frozen=True, slots=True)
class ClassEntry:
    name: str
    flags: tuple[str, ...] = ()

    def matches(self, argv: tuple[str, ...]) -> bool:
        if not argv or (argv[0] != self.name and not command_name_glob(self.name, argv[0])):
            return False
        if not self.flags:
            return True
        for a in argv[1:]:
            for f in self.flags:
                if a == f or a.startswith(f + "="):
                    return True
                if len(f) == 2 and f[0] == "-" and a[:1] == "-" and a[1:2] != "-" and f[1] in a:
                    return True
        return False


@dataclass(slots=True)
class Resolution:
    """Compiled ``resolution`` section: what the resolver and the predicates need."""

    classes: dict[str, tuple[ClassEntry, ...]]
    wrappers: dict[str, dict[str, Any]]
    subcommands: dict[str, dict[str, Any]]
    flags: dict[str, dict[str, Any]]
    interpreter_patterns: list[tuple[re.Pattern[str], str, tuple[str, ...]]]
    code_flags: frozenset[str]
    find_filters: frozenset[str]
    path_classes: dict[str, list[str]]
    shells: frozenset[str] = frozenset()
    interpreters: frozenset[str] = frozenset()
    known_names: frozenset[str] = frozenset()
    class_index: dict[str, dict[str, tuple[ClassEntry, ...]]] = field(default_factory=dict)
    class_globs: dict[str, tuple[ClassEntry, ...]] = field(default_factory=dict)

    def index(self) -> None:
        """Name -> entries per class, so membership is a dict lookup."""
        for cls, entries in self.classes.items():
            idx: dict[str, list[ClassEntry]] = {}
            for e in entries:
                if not e.name.endswith("*"):
                    idx.setdefault(e.name, []).append(e)
            self.class_index[cls] = {k: tuple(v) for k, v in idx.items()}
            self.class_globs[cls] = tuple(e for e in entries if e.name.endswith("*"))

    def in_class(self, cls: str, argv: tuple[str, ...]) -> bool:
        if not argv:
            return False
        if cls == "any":
            return True
        got = self.class_index.get(cls, {}).get(argv[0])
        if got is not None and any(e.matches(argv) for e in got):
            return True
        globs = self.class_globs.get(cls)
        if not globs:
            return False
        return any(e.matches(argv) for e in globs)

    def class_names(self, cls: str) -> frozenset[str] | None:
        """Exact names in a class, or None when it has globs (or is ``any``)."""
        if cls == "any" or self.class_globs.get(cls):
            return None
        return frozenset(self.class_index.get(cls, {}))


# re.compile raises more than re.error: OverflowError for huge repeat counts, RecursionError
# for deeply nested groups; all of them mean an invalid regex in a policy.
_REGEX_ERRORS = (re.error, OverflowError, RecursionError, ValueError)
# Command-knowledge specs: the keys each kind of entry may hold and their JSON shapes.
_SPEC_KEYS: dict[str, dict[str, str]] = {
    "wrappers": {
        "with_value": "strings",
        "no_exec_flags": "strings",
        "string_flags": "strings",  # the flag's value is a shell string it runs (script -c)
        "skip_positionals": "count",
        "mode": "string",
    },
    "subcommands": {"with_value": "strings"},
    "flags": {"aliases": "string-map", "with_value": "strings"},
}
MAX_DOCUMENT_DEPTH = 32  # policies nest under 8 levels; deeper is an error, not a stack overflow


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _shape_ok(v: Any, shape: str) -> bool:
    if shape == "strings":
        return _str_list(v)
    if shape == "count":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if shape == "string":
        return isinstance(v, str)
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())  # string-map


_SHAPE_TEXT = {
    "strings": "a list of strings",
    "count": "a non-negative integer",
    "string": "a string",
    "string-map": "an object of strings",
}


def _well_formed_resolution(d: dict[str, Any], err: Callable[[str, str], None]) -> dict[str, Any]:
    """Check every section's JSON shape; return only the parts that are well formed, so
    compiling never meets a value of the wrong type (each bad part is an error by path)."""
    out: dict[str, Any] = {}
    for key in ("classes", "paths"):
        section = d.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            err(f"resolution.{key}", "must be an object of lists of strings")
            continue
        out[key] = {}
        for name, v in section.items():
            if _str_list(v):
                out[key][name] = v
            else:
                err(f"resolution.{key}.{name}", "must be a list of strings")
    for key, spec_keys in _SPEC_KEYS.items():
        section = d.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            err(f"resolution.{key}", "must be an object of objects")
            continue
        out[key] = {}
        for name, spec in section.items():
            path = f"resolution.{key}.{name}"
            if not isinstance(spec, dict):
                err(path, "must be an object")
                continue
            good = True
            for k, v in spec.items():
                shape = spec_keys.get(k)
                if shape is None:
                    err(f"{path}.{k}", f"unknown key (known: {', '.join(sorted(spec_keys))})")
                    good = False
                elif not _shape_ok(v, shape):
                    err(f"{path}.{k}", f"must be {_SHAPE_TEXT[shape]}")
                    good = False
            if good:
                out[key][name] = spec
    for key in ("code_flags", "find_filters"):
        v = d.get(key)
        if v is None:
            continue
        if _str_list(v):
            out[key] = v
        else:
            err(f"resolution.{key}", "must be a list of strings")
    patterns = d.get("interpreter_patterns")
    if patterns is not None:
        if isinstance(patterns, list):
            out["interpreter_patterns"] = patterns
        else:
            err("resolution.interpreter_patterns", "must be a list of {regex, kind}")
    return out


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True if lists/objects nest deeper than ``limit`` (iterative: no recursion to overflow)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _compile_resolution(d: dict[str, Any], errors: dict[str, list[str]]) -> Resolution:
    def err(path: str, msg: str) -> None:
        errors.setdefault(path, []).append(msg)

    if not isinstance(d, dict):
        err("resolution", "must be an object")
        d = {}
    for k in d:
        if k not in _RESOLUTION_KEYS:
            err(f"resolution.{k}", f"unknown key (known: {', '.join(sorted(_RESOLUTION_KEYS))})")
    d = _well_formed_resolution(d, err)
    classes: dict[str, tuple[ClassEntry, ...]] = {}
    for name, entries in (d.get("classes") or {}).items():
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            err(f"resolution.classes.{name}", "must be a list of strings")
            continue
        parsed = []
        for e in entries:
            head, _, rest = e.partition(" ")
            parsed.append(ClassEntry(head, tuple(x for x in rest.split("|") if x)))
        classes[name] = tuple(parsed)
    patterns: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = []
    for i, p in enumerate(d.get("interpreter_patterns") or []):
        path = f"resolution.interpreter_patterns[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("regex"), str):
            err(path, "needs regex (and kind)")
            continue
        try:
            rx = re.compile(p["regex"], re.S)
        except _REGEX_ERRORS as exc:
            err(path + ".regex", f"invalid regex: {exc}")
            continue
        if "s" not in rx.groupindex:
            err(path + ".regex", "needs a named group (?P<s>...)")
        kind = p.get("kind", "shell")
        if kind not in ("shell", "list", "argv"):
            err(path + ".kind", "must be shell, list or argv")
        argv = p.get("argv", [])
        if not _str_list(argv):
            err(path + ".argv", "must be a list of strings")
            argv = []
        patterns.append((rx, kind, tuple(argv)))
    res = Resolution(
        classes=classes,
        wrappers=dict(d.get("wrappers") or {}),
        subcommands=dict(d.get("subcommands") or {}),
        flags=dict(d.get("flags") or {}),
        interpreter_patterns=patterns,
        code_flags=frozenset(d.get("code_flags") or ()),
        find_filters=frozenset(d.get("find_filters") or ()),
        path_classes={k: list(v) for k, v in (d.get("paths") or {}).items()},
    )
    res.index()
    res.shells = frozenset(e.name for e in classes.get("shells", ()))
    res.interpreters = frozenset(e.name for e in classes.get("interpreters", ()))
    return res


def _check_match(m: Any, path: str, res: Resolution, err: Callable[[str, str], None]) -> None:
    if not isinstance(m, dict) or not m:
        err(path, "must be a non-empty object")
        return
    for k, v in m.items():
        p = f"{path}.{k}"
        if k not in MATCH_KEYS:
            err(p, f"unknown match key (known: {', '.join(sorted(MATCH_KEYS))})")
        elif k in ("commands", "subcommand", "flags_any", "flags_all", "flags_none"):
            if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
                err(p, "must be a non-empty list of strings")
            elif k.startswith("flags"):
                commands, subs = m.get("commands", []), m.get("subcommand", [])
                known = _known_flags(
                    res, commands if _str_list(commands) else [], subs if _str_list(subs) else []
                )
                for x in v:
                    if x not in known:
                        err(p, f"unknown flag {x!r} for these commands")
        elif k == "args_any":
            _check_preds(v, p, err)
        elif k in ("arg_regex", "argv_regex", "assign_regex"):
            _check_regex(v, p, err)
        elif k == "option":
            if not isinstance(v, dict) or set(v) - {"names", "is"} or "names" not in v:
                err(p, "must be {names: [...], is: [predicates]}")
            elif not _str_list(v["names"]) or not v["names"]:
                err(p + ".names", "must be a non-empty list of strings")
            else:
                _check_preds(v.get("is", ["any"]), p + ".is", err)
        elif k == "pipeline":
            if not isinstance(v, dict) or set(v) - {
                "source_class",
                "not_source_class",
                "sink_class",
                "program_from_stdin",
                "remote_sink",
            }:
                err(
                    p,
                    "must be {source_class, not_source_class, sink_class, program_from_stdin, "
                    "remote_sink}",
                )
                continue
            for flag in ("program_from_stdin", "remote_sink"):
                if not isinstance(v.get(flag, False), bool):
                    err(f"{p}.{flag}", "must be true or false")
            for ck in ("source_class", "not_source_class", "sink_class"):
                if ck == "not_source_class" and ck not in v:
                    continue
                vals = v.get(ck, [])
                vals = [vals] if isinstance(vals, str) else vals
                if not _str_list(vals):
                    err(f"{p}.{ck}", "must be a command class or a list of them")
                    continue
                if not vals:
                    err(f"{p}.{ck}", "required")
                for c in vals:
                    if c != "any" and c not in res.classes:
                        err(f"{p}.{ck}", f"unknown command class {c!r}")
        elif k == "redirect":
            if not isinstance(v, dict) or set(v) - {"target", "ops"}:
                err(p, "must be {target: [predicates], ops: [...]}")
                continue
            _check_preds(v.get("target", ["any"]), p + ".target", err)
            if not _str_list(v.get("ops", [])):
                err(p + ".ops", "must be a list of strings")
                continue
            for op in v.get("ops", []):
                if op not in REDIRECT_OPS:
                    err(p + ".ops", f"unknown op {op!r}")
        elif k == "writes":
            if not isinstance(v, dict) or set(v) - {"target", "modes", "content_regex", "content"}:
                err(p, "must be {target, modes, content_regex, content}")
                continue
            _check_preds(v.get("target", ["any"]), p + ".target", err)
            if not _str_list(v.get("modes", [])):
                err(p + ".modes", "must be a list of strings")
                continue
            for md in v.get("modes", []):
                if md not in WRITE_MODES:
                    err(p + ".modes", f"unknown mode {md!r}")
            if "content_regex" in v:
                _check_regex(v["content_regex"], p + ".content_regex", err)
            if not isinstance(v.get("content", "any"), str) or v.get("content", "any") not in (
                "empty",
                "present",
                "any",
            ):
                err(p + ".content", "must be empty, present or any")
        elif k == "signal" and (not isinstance(v, str) or v not in SIGNALS):
            err(p, f"unknown signal {v!r} (known: {', '.join(SIGNALS)})")
        elif k == "effect":
            _check_effect(v, p, err)
            others = sorted(set(m) - {"effect"})
            if others:
                err(p, f"an effect rule matches effects only: drop {', '.join(others)}")


def _check_effect(v: Any, p: str, err: Callable[[str, str], None]) -> None:
    if not isinstance(v, dict):
        err(p, "must be {kind, op, ...fields}")
        return
    kinds = v.get("kind")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not _str_list(kinds) or not kinds:
        err(p + ".kind", "required: an effect kind or a list of them")
        return
    unknown = [x for x in kinds if x not in EFFECT_OPS]
    if unknown:
        err(p + ".kind", f"unknown effect kind {unknown[0]!r} (known: {', '.join(EFFECT_OPS)})")
        return
    for key, val in v.items():
        kp = f"{p}.{key}"
        if key == "kind":
            continue
        spec = EFFECT_FIELDS.get(key)
        if spec is None:
            err(kp, f"unknown effect field (known: kind, {', '.join(sorted(EFFECT_FIELDS))})")
            continue
        applies, shape, allowed = spec
        wrong = [x for x in kinds if x not in applies]
        if wrong:
            err(kp, f"does not apply to {wrong[0]} effects")
            continue
        if key == "op":
            allowed = tuple(o for x in kinds for o in EFFECT_OPS[x])
        if shape == "bool":
            if not isinstance(val, bool):
                err(kp, "must be true or false")
        elif shape == "regex":
            _check_regex(val, kp, err)
        elif not _str_list(val) or not val:
            err(kp, "must be a non-empty list of strings")
        else:
            for x in val:
                if x not in allowed:
                    err(kp, f"unknown value {x!r} (known: {', '.join(allowed)})")


def _known_flags(res: Resolution, commands: list[str], subs: list[str]) -> set[str]:
    out: set[str] = set()
    keys = [c for c in commands] + [f"{c} {s.split()[0]}" for c in commands for s in subs]
    for key in keys:
        t = res.flags.get(key)
        if t:
            out.update(t.get("aliases", {}).values())
            out.update(a for a in t.get("aliases", {}) if a.startswith("-"))
    return out


def _check_preds(v: Any, p: str, err: Callable[[str, str], None]) -> None:
    if not isinstance(v, list) or not v:
        err(p, "must be a non-empty list of predicates")
        return
    for x in v:
        if not isinstance(x, str) or x not in PREDICATES:
            err(p, f"unknown predicate {x!r} (known: {', '.join(sorted(PREDICATES))})")


def _check_regex(v: Any, p: str, err: Callable[[str, str], None]) -> None:
    if not isinstance(v, str):
        err(p, "must be a regex string")
        return
    try:
        re.compile(v)
    except _REGEX_ERRORS as exc:
        err(p, f"invalid regex: {exc}")


class Policy:
    """A validated policy; immutable once built; ``digest`` is sha256 of its canonical JSON."""

    __slots__ = (
        "_data",
        "by_name",
        "description",
        "digest",
        "effect_rules",
        "generic",
        "name",
        "resolution",
        "rules",
        "slug",
        "version",
    )

    def __init__(self) -> None:  # use Policy.from_dict
        self.slug = ""
        self.version = 0
        self.name = ""
        self.description = ""
        self.rules: tuple[Rule, ...] = ()
        self.resolution: Resolution
        self.digest = ""
        self._data: dict[str, Any] = {}
        self.by_name: dict[str, tuple[Rule, ...]] = {}
        self.generic: tuple[Rule, ...] = ()
        self.effect_rules: tuple[Rule, ...] = ()

    @classmethod
    def from_dict(cls, d: Any) -> Policy:
        """Validate and build; raises PolicyError naming every offending path.

        Examples are only checked for shape here: running them needs the analyzer, which sits
        above this module (``examples.check_examples``, a step of publishing a policy)."""
        errors: dict[str, list[str]] = {}

        def err(path: str, msg: str) -> None:
            errors.setdefault(path, []).append(msg)

        if not isinstance(d, dict):
            raise PolicyError({"policy": ["must be an object"]})
        if _depth_exceeds(d, MAX_DOCUMENT_DEPTH):
            raise PolicyError({"policy": [f"nested deeper than {MAX_DOCUMENT_DEPTH} levels"]})
        for k in d:
            if k not in (
                "slug",
                "version",
                "name",
                "description",
                "resolution",
                "rules",
                "categories",
            ):
                err(k, "unknown key")
        slug = d.get("slug")
        if not isinstance(slug, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", slug or ""):
            err("slug", "required: lowercase letters, digits and dashes")
        version = d.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            err("version", "required: a positive integer")
        for k in ("name", "description"):
            if not isinstance(d.get(k, ""), str):
                err(k, "must be a string")
        res = _compile_resolution(d.get("resolution", {}), errors)
        rules_in = d.get("rules")
        rules: list[Rule] = []
        seen: set[str] = set()
        if not isinstance(rules_in, list):
            err("rules", "must be a list")
            rules_in = []
        for i, r in enumerate(rules_in):
            p = f"rules[{i}]"
            if not isinstance(r, dict):
                err(p, "must be an object")
                continue
            for k in r:
                if k not in (
                    "id",
                    "category",
                    "severity",
                    "action",
                    "message",
                    "description",
                    "match",
                    "examples",
                ):
                    err(f"{p}.{k}", "unknown key")
            rid = r.get("id")
            if not isinstance(rid, str) or not _RULE_ID_RE.match(rid):
                err(f"{p}.id", "required: dotted lowercase id like fs.delete-outside-workspace")
            elif rid in seen:
                err(f"{p}.id", f"duplicate rule id {rid!r}")
            else:
                seen.add(rid)
            if r.get("category") not in CATEGORIES:
                err(f"{p}.category", f"must be one of {', '.join(CATEGORIES)}")
            if r.get("severity") not in SEVERITIES:
                err(f"{p}.severity", f"must be one of {', '.join(SEVERITIES)}")
            if r.get("action") not in ACTIONS:
                err(f"{p}.action", f"must be one of {', '.join(ACTIONS)}")
            if not isinstance(r.get("message"), str) or not r.get("message", "").strip():
                err(f"{p}.message", "required: one human sentence")
            if not isinstance(r.get("description", ""), str):
                err(f"{p}.description", "must be a string")
            _check_match(r.get("match"), f"{p}.match", res, err)
            ex = r.get("examples", {})
            if not isinstance(ex, dict) or set(ex) - {"must_match", "must_not_match"}:
                err(f"{p}.examples", "must be {must_match: [...], must_not_match: [...]}")
                ex = {}
            for ek, ev in ex.items():
                if not isinstance(ev, list) or not all(isinstance(x, str) for x in ev):
                    err(f"{p}.examples.{ek}", "must be a list of commands")
            if not any(k.startswith(p) for k in errors):
                rules.append(
                    Rule(
                        r["id"],
                        r["category"],
                        r["severity"],
                        r["action"],
                        r["message"],
                        copy.deepcopy(r["match"]),
                        r.get("description", ""),
                        copy.deepcopy(ex),
                    )
                )
        if errors:
            raise PolicyError(errors)
        pol = cls()
        pol.slug = d["slug"]
        pol.version = d["version"]
        pol.name = d.get("name", pol.slug)
        pol.description = d.get("description", "")
        pol.rules = tuple(rules)
        pol.resolution = res
        pol._data = copy.deepcopy(d)
        pol.digest = document_digest(pol._data)
        by_name: dict[str, list[Rule]] = {}
        generic: list[Rule] = []
        for rule in rules:
            names = rule.match.get("commands")
            if names:
                for n in names:
                    by_name.setdefault(n, []).append(rule)
            elif "signal" not in rule.match and "effect" not in rule.match:
                generic.append(rule)
        pol.by_name = {k: tuple(v) for k, v in by_name.items()}
        pol.generic = tuple(generic)
        pol.effect_rules = tuple(r for r in rules if "effect" in r.match)
        known = set(by_name) | set(res.wrappers) | res.shells | res.interpreters
        for entries in res.classes.values():
            known.update(e.name for e in entries)
        res.known_names = frozenset(n for n in known if not n.endswith("*"))
        return pol

    def rules_for(self, name: str) -> tuple[Rule, ...]:
        """The rules naming this command: by its exact name, else by the first ``mkfs.*`` style
        name it matches (``RuleMatcher`` indexes the same once, for matching)."""
        got = self.by_name.get(name)
        if got is not None:
            return got
        for k, v in self.by_name.items():
            if command_name_glob(k, name):
                return v
        return ()

    def signal_rules(self) -> dict[str, Rule]:
        return {r.match["signal"]: r for r in self.rules if "signal" in r.match}

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"<Policy {self.slug}@{self.version} {self.digest[:19]}>"


def document_digest(d: Any) -> str:
    """``sha256:<hex>`` of a policy document's canonical JSON: the digest ``Policy`` carries."""
    canonical = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _default_policy_data() -> str:
    path = Path(__file__).resolve().parent.parent / "policies" / "default_policy.json"
    return path.read_text("utf-8")


@functools.lru_cache(maxsize=1)
def parse_default_policy() -> Policy:
    """The built-in default policy, validated; ``examples.load_default_policy`` (what callers
    use) also checks its examples."""
    return Policy.from_dict(json.loads(_default_policy_data()))
