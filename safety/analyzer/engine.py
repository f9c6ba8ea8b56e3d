"""The analyzer: parse with both front ends, resolve, apply the policy, fail closed.

``analyze`` never raises for any input: anything unexpected becomes an ``analyzer`` finding with
action ``review``. An ``Analyzer`` is built once per (policy digest, config) and kept in the one
registry ``analyzers`` (``compiled_analyzer``); each keeps its results by command text in a
bounded LRU.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import config as limits
from . import deadline
from .config import AnalyzerConfig
from .effects import Effect, EffectReader, PathState
from .frontends import bashlex_fe, plain_fe, treesitter_fe
from .ir import MARK, Command, Node, ParseResult, Span, iter_commands
from .lru import LRU
from .policy import Policy, Rule, document_digest, parse_default_policy
from .resolve import Cmd, Resolver, Signal, shown, shown_argv
from .rules import RuleHit, RuleMatcher
from .vocabulary import ACTION_RANK, SEVERITY_RANK


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule hit: what, how bad, what to do, and where in the original command."""

    rule: str
    category: str
    severity: str
    action: str
    span: tuple[int, int]
    argv: list[str]
    message: str
    command: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "action": self.action,
            "span": list(self.span),
            "message": self.message,
            "argv": list(self.argv),
            "command": self.command,
        }


@dataclass(frozen=True, slots=True)
class Analysis:
    """One command's verdict and findings, and what they were read from: the resolved commands,
    the resolver's signals, and each resolved command's effects (``resolved`` and
    ``cmd_effects`` align; effects there carry no origin) and all effects with the origins this
    command alone gives them (``effects``, what the effect rules were matched on)."""

    verdict: str
    findings: list[Finding]
    command: str
    commands: tuple[tuple[str, ...], ...] = ()  # resolved argv of every command seen
    parsers: dict[str, bool] = field(default_factory=dict)
    resolved: tuple[Cmd, ...] = ()
    signals: tuple[Signal, ...] = ()
    cmd_effects: tuple[tuple[Effect, ...], ...] = ()
    effects: tuple[Effect, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
        }


_FALLBACK = {
    "unparseable": ("high", "Neither parser can read this command, so it cannot be checked."),
    "parse-error": ("medium", "The command has a syntax error; what it runs cannot be verified."),
    "misparse": ("medium", "The parse shows shell keywords as command names; it may be misread."),
    "parser-disagreement": ("medium", "The two parsers disagree about which commands this runs."),
    "dynamic-command-name": ("medium", "The command name is computed at run time."),
    "eval-dynamic": ("high", "A string only known at run time is executed as shell code."),
    "too-long": ("medium", "The command is too long to analyze completely."),
    "too-deep": ("medium", "Nested shells go deeper than the analyzer follows."),
    "too-complex": ("medium", "The command is too complex to analyze completely."),
    "hidden-characters": ("high", "Invisible or look-alike characters disguise the command."),
    "nested-parse-error": ("medium", "A string run as shell code has a syntax error."),
    "fork-bomb": ("critical", "A function starts copies of itself without bound (fork bomb)."),
    "prompt-expansion": ("high", "Prompt expansion (${var@P}) can run hidden commands."),
    "internal-error": ("high", "The analyzer failed on this command; it needs a human look."),
    "dynamic-flags": ("medium", "Flags known only at run time could make this a flagged command."),
    "stops-at-syntax-error": (
        "info",
        "Bash stops at a syntax error here: the text from this line on never runs.",
    ),
}
# a line that starts with one of these is a syntax error where a command should start
_STRAY_START = re.compile(r"(?m)^[ \t]*(?:&&|\|\||\||;;|;)(?!;)")


def _runs_before_syntax_error(
    text: str, depth: int, cfg: AnalyzerConfig
) -> tuple[str, ParseResult, ParseResult | None] | None:
    """The text bash runs when a later line starts with an operator (``PY\\n && nl -ba f``:
    the here-document runs, then bash stops at the stray ``&&``), with its parses; None unless
    tree-sitter reads that text cleanly, so what cannot be read is still flagged."""
    for m in _STRAY_START.finditer(text):
        head = text[: m.start()]
        if not head.strip():
            return None
        ts = treesitter_fe.parse(head, max_depth=depth)
        if not ts.ok or ts.misparse:
            continue  # inside a here-document or a string: not where bash stopped
        # as for any command tree-sitter reads cleanly, bashlex is only a cross-check here
        bl = bashlex_fe.parse(head, max_chars=cfg.max_command_chars, build_ir=False)
        return head, ts, bl if bl is not None and bl.ok else None
    return None


_SKIP_WORDS = frozenset({"[", "[[", "test", "time", "!", "{", "}", "coproc", "function"})


class Analyzer:
    """Policy + config bound together, with a bounded LRU cache of results.

    Everything the policy implies under this config (rule checks, regexes, candidate rules by
    command name, flag tables) is built here, once; ``compiled_analyzer`` shares one per process.
    """

    def __init__(self, policy: Policy, config: AnalyzerConfig | None = None) -> None:
        self.policy = policy
        self.config = config or AnalyzerConfig()
        self.res = policy.resolution
        self.matcher = RuleMatcher(policy, self.config)
        self.reader = EffectReader(self.res, self.config)
        self.effect_rule_ids = frozenset(r.id for r in policy.effect_rules)
        self.signal_rules = policy.signal_rules()
        size = self.config.cache_size
        self._cache: LRU[str, Analysis] = LRU(limits.RESULT_CACHE_SIZE if size is None else size)
        self.hits = 0
        self.misses = 0

    def analyze(self, command: Any) -> Analysis:
        if not isinstance(command, str):
            command = "" if command is None else str(command)
        got = self._cache.get(command)
        if got is not None:
            self.hits += 1
            # a fresh list, so a caller sorting or filtering it cannot change the cache
            return dataclasses.replace(got, findings=list(got.findings), command=command)
        self.misses += 1
        seconds = self.config.command_seconds
        try:
            with deadline.bounded(limits.COMMAND_SECONDS if seconds is None else seconds):
                result = self._analyze(command)
        except deadline.Expired:
            # Not cached: with less load the same command may finish within the bound.
            return self._too_complex(command)
        except Exception:
            f = self._signal_finding(Signal("internal-error", (0, len(command))), command, None)
            result = Analysis("review", [f], command)
        self._cache.put(command, result)
        return result

    def _too_complex(self, command: str) -> Analysis:
        """The analysis of a command that ran out of time: a review at least (fail closed),
        whatever the policy's rule for ``too-complex`` says."""
        signal = Signal("too-complex", (0, len(command)), "time bound")
        f = self._signal_finding(signal, command, None)
        if ACTION_RANK[f.action] < ACTION_RANK["review"]:
            f = dataclasses.replace(f, action="review")
        return Analysis(f.action, [f], command, signals=(signal,))

    def cache_clear(self) -> None:
        """Forget every analysed command (a cold start)."""
        self._cache.clear()

    def _analyze(self, command: str) -> Analysis:
        cfg = self.config
        signals: list[Signal] = []
        text = command
        if len(text) > cfg.max_command_chars:
            signals.append(Signal("too-long", (cfg.max_command_chars, len(command))))
            text = text[: cfg.max_command_chars]
        if "\x00" in text:
            text = text.replace("\x00", "\u200b")  # keep offsets; NUL is our marker
        if not text.strip():
            return Analysis("allow", [], command)
        depth = cfg.max_depth * 40
        ts = plain_fe.parse(text, max_depth=depth) if cfg.plain_fast_path else None
        plain = ts is not None  # plain text: both parsers read it the same way (see below)
        if ts is None:
            ts = treesitter_fe.parse(text, max_depth=depth)
        bl: ParseResult | None = None
        clean = ts.ok and not ts.misparse
        if cfg.use_bashlex and not (
            clean and cfg.bashlex_fast_path and (plain or _lexically_plain(text))
        ):
            # bashlex's own share of the command's time bound (a timed-out cross-check is only
            # a missing cross-check); past the command's whole bound, ``check`` stops here.
            with deadline.bounded(cfg.parse_timeout_s if len(text) > _DEADLINE_MIN_CHARS else 0):
                bl = bashlex_fe.parse(text, max_chars=cfg.max_command_chars, build_ir=not clean)
            deadline.check()
        if not ts.ok and (bl is None or not bl.ok):
            head = _runs_before_syntax_error(text, depth, cfg)
            if head is not None:
                # bash runs each complete command as it reads it and stops at a syntax error:
                # what runs is the text before the line it rejects, and nothing after it
                text, ts, bl = head
                signals.append(Signal("stops-at-syntax-error", (len(text), len(command))))
        roots = []
        if ts.root is not None:
            roots.append(ts.root)
        if not ts.ok:
            span = ts.error_span or (0, len(text))
            if bl is not None and bl.ok:
                signals.append(Signal("parse-error", span, ts.error))
            else:
                signals.append(Signal("unparseable" if bl is not None else "parse-error", span))
            if bl is not None and bl.ok and bl.root is not None:
                roots.append(bl.root)
        elif ts.misparse:
            span = _keyword_span(ts)
            signals.append(Signal("misparse", span))
            if bl is not None and bl.ok and bl.root is not None:
                roots.append(bl.root)
        elif bl is not None and bl.ok:
            a = _command_words(ts.root)
            b = list(bl.words) if bl.words is not None else _command_words(bl.root)
            if sorted(w for w, _ in a) != sorted(w for w, _ in b):
                signals.append(Signal("parser-disagreement", _first_diff(a, b, len(text))))
        if "\r" in text or not text.isascii():
            signals.extend(_separator_signals(text, ts))
        cmds: list[Cmd] = []
        for root in roots:
            r = Resolver(self.res, cfg, text)
            r.run(root)
            cmds.extend(r.cmds)
            signals.extend(r.signals)
        deadline.check()
        findings: list[Finding] = []
        seen: set[tuple[str, tuple[int, int]]] = set()
        for hit in self.matcher.match(cmds, seen):
            if hit.flags_unknown:
                findings.append(self._dynamic_flags_finding(hit, command))
            else:
                findings.append(_finding(hit.rule, hit.cmd.span, list(hit.cmd.argv), command))
        # effects: each command read once, then the origins this command alone gives them
        state = PathState(self.reader.paths)
        deadline.check()
        cmd_effects = self.reader.commands(cmds, state)
        deadline.check()
        effects: list[Effect] = []
        for raw in cmd_effects:
            effects.extend(state.apply(e) for e in raw)
        if effects:
            findings.extend(self.effect_findings(effects, command, cmds, seen))
        for s in signals:
            key = ("analyzer." + s.name, s.span)
            if key in seen:
                continue
            seen.add(key)
            findings.append(self._signal_finding(s, command, None))
        verdict = "allow"
        for f in findings:
            if ACTION_RANK[f.action] > ACTION_RANK[verdict]:
                verdict = f.action
        if len(findings) > 1:
            findings.sort(
                key=lambda f: (-ACTION_RANK[f.action], -SEVERITY_RANK[f.severity], f.span)
            )
        parsers = {"tree-sitter": ts.ok and not ts.misparse}
        if bl is not None:
            parsers["bashlex"] = bl.ok
        return Analysis(
            verdict,
            findings,
            command,
            tuple([shown_argv(c.argv) for c in cmds]),
            parsers,
            tuple(cmds),
            tuple(signals),
            tuple(cmd_effects),
            tuple(effects),
        )

    # the public reading API (the trajectory effect model builds on it) ---------------------------
    def resolve(self, command: str) -> Analysis:
        """The command read once and cached: resolved commands, signals, effects and findings
        (the same ``Analysis`` as ``analyze``; the shell is never parsed a second time). The
        cached object itself, not ``analyze``'s copy: the effect model reads every command of
        every trajectory through here, so callers read it and never change it."""
        got = self._cache.get(command)
        if got is None:
            return self.analyze(command)
        self.hits += 1
        return got

    def effect_findings(
        self,
        effects: Sequence[Effect],
        command: str,
        cmds: Sequence[Cmd] = (),
        seen: set[tuple[str, tuple[int, int]]] | None = None,
    ) -> list[Finding]:
        """Findings of the policy's effect rules on these effects (origins as given: a trajectory
        passes effects with its own history), one per (rule, span)."""
        seen = set() if seen is None else seen
        argv_at = {c.span: c.argv for c in cmds}
        per_file: set[tuple[str, str]] = set()
        out: list[Finding] = []
        for rule, e in self.matcher.match_effects(effects):
            argv = argv_at.get(e.span)
            if argv is None:
                # not a shell command's effect (a file tool, the final patch): one finding per
                # rule and file, its argv naming them
                what = (e.op, getattr(e, "path", None) or "")
                if (rule.id, what[1]) in per_file:
                    continue
                per_file.add((rule.id, what[1]))
                out.append(_finding(rule, e.span, [what[0], what[1]], command))
                continue
            key = (rule.id, e.span)
            if key in seen:
                continue
            seen.add(key)
            out.append(_finding(rule, e.span, list(argv), command))
        return out

    def command_findings(self, analysis: Analysis) -> list[Finding]:
        """The findings of an analysis that do not come from effect rules (command rules and
        signals: the same whatever the agent did before)."""
        return [f for f in analysis.findings if f.rule not in self.effect_rule_ids]

    def verdict_of(self, findings: Sequence[Finding]) -> str:
        verdict = "allow"
        for f in findings:
            if ACTION_RANK[f.action] > ACTION_RANK[verdict]:
                verdict = f.action
        return verdict

    def _dynamic_flags_finding(self, hit: RuleHit, command: str) -> Finding:
        """A review: with some run-time value of its flags the command matches ``hit.rule``."""
        cmd = hit.cmd
        f = self._signal_finding(Signal("dynamic-flags", cmd.span), command, list(cmd.argv))
        return dataclasses.replace(f, message=f"{f.message} With some values: {hit.rule.message}")

    def _signal_finding(self, s: Signal, command: str, argv: list[str] | None) -> Finding:
        rule = self.signal_rules.get(s.name)
        if rule is not None:
            return _finding(rule, s.span, argv or [], command)
        sev, msg = _FALLBACK.get(s.name, ("medium", "The analyzer could not fully check this."))
        shown_args = [shown(a) for a in argv] if argv else []
        return Finding(
            "analyzer." + s.name, "analyzer", sev, "review", s.span, shown_args, msg, command
        )


# Text made only of plain words, simple quotes and the operators | ; & (no expansions, escapes,
# redirects, groups or keywords) is read identically by both parsers, so the bashlex cross-check
# is skipped for it. The differential test checks this claim over the NL2Bash corpus.
_PLAIN_RE = re.compile(r"""^(?:[A-Za-z0-9_./=:,@%+\-*?~^ \t|;&]|'[^']*'|"[^"$`\\!]*")*$""")
_PLAIN_SPLIT = re.compile(r"[\s|;&]+")
_KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "case",
        "esac",
        "while",
        "until",
        "for",
        "in",
        "function",
        "select",
        "time",
        "coproc",
    ]
)
_DEADLINE_MIN_CHARS = 2000  # shorter inputs parse in milliseconds: only the command bound


def _lexically_plain(text: str) -> bool:
    if not _PLAIN_RE.match(text):
        return False
    return _KEYWORDS.isdisjoint(_PLAIN_SPLIT.split(text))


_SEP_RE = re.compile("\r(?!\n)|[\u2028\u2029\x85]")


def _separator_signals(text: str, ts: ParseResult) -> list[Signal]:
    """Line separators bash does not split on but a reader (or another tool) would."""
    hits = [m.start() for m in _SEP_RE.finditer(text)]
    if not hits:
        return []
    quoted: list[tuple[int, int]] = []
    for c in iter_commands(ts.root):
        for w in c.words:
            if text[w.span[0] : w.span[0] + 1] in ("'", '"', "$"):
                quoted.append(w.span)
    out = []
    for pos in hits:
        if not any(a < pos < b for a, b in quoted):
            out.append(Signal("hidden-characters", (pos, pos + 1), "line separator"))
    return out


def _finding(rule: Rule, span: tuple[int, int], argv: list[str], command: str) -> Finding:
    return Finding(
        rule.id,
        rule.category,
        rule.severity,
        rule.action,
        span,
        [shown(a) for a in argv],
        rule.message,
        command,
    )


def _command_words(root: Node | None) -> list[tuple[str, tuple[int, int]]]:
    out = []
    for c in iter_commands(root):
        if not isinstance(c, Command) or not c.words:
            continue
        w = c.words[0]
        t = w.text
        if MARK in t or "$" in t or "`" in t:
            t = "$"
        else:
            t = t.rsplit("/", 1)[-1] if "/" in t.rstrip("/") else t
        if t in _SKIP_WORDS:
            continue
        out.append((t, w.span))
    return out


def _first_diff(a: list[tuple[str, Span]], b: list[tuple[str, Span]], n: int) -> tuple[int, int]:
    bs = {w for w, _ in b}
    for w, sp in a:
        if w not in bs:
            return sp
    as_ = {w for w, _ in a}
    for w, sp in b:
        if w not in as_:
            return sp
    return (0, n)


def _keyword_span(ts: ParseResult) -> tuple[int, int]:
    for c in iter_commands(ts.root):
        if c.keyword_like:
            return c.words[0].span
    return (0, 0)


# The one registry of compiled analyzers in a process, by (policy digest, config): the safety
# service and the scorers take their analyzers (and so their results) from it. Bound:
# ``RH_CACHE_ANALYZERS``.
analyzers: LRU[tuple[str, AnalyzerConfig], Analyzer] = LRU(32)


def compiled_analyzer(
    policy: Policy | Mapping[str, Any],
    config: AnalyzerConfig | None = None,
    *,
    digest: str | None = None,
) -> Analyzer:
    """The process's analyzer for a policy (compiled, or its document) under ``config``, built
    the first time and then kept in ``analyzers``. ``digest``: the document's digest when the
    caller knows it (a published version's), so that a lookup does not hash the document; it
    is trusted, as the digest a version was published under."""
    cfg = config or AnalyzerConfig()
    if isinstance(policy, Policy):
        digest = policy.digest
    elif digest is None:
        digest = document_digest(policy)
    key = (digest, cfg)
    analyzer = analyzers.get(key)
    if analyzer is None:
        analyzer = analyzers.put(key, Analyzer(_policy(policy, digest), cfg))
    return analyzer


def _policy(policy: Policy | Mapping[str, Any], digest: str) -> Policy:
    """The compiled policy: given, held by an analyzer of another config, or compiled now."""
    if isinstance(policy, Policy):
        return policy
    for analyzer in analyzers.values():
        if analyzer.policy.digest == digest:
            return analyzer.policy
    return Policy.from_dict(policy)  # its examples held when it was published


def analyze(
    command: str, policy: Policy | None = None, config: AnalyzerConfig | None = None
) -> Analysis:
    """Analyze one command with the registry's Analyzer for this policy (default: the built-in
    one; its examples are checked by ``examples.load_default_policy``, not here) and config."""
    return compiled_analyzer(policy or parse_default_policy(), config).analyze(command)
