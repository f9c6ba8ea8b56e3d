"""tree-sitter-bash front end (MIT): the primary parser.

It never raises and reads ``[[ ]]``, ``$(( ))``, ``case``, arrays and quoted here-doc delimiters,
but it recovers from errors silently, so the caller gets ``ok=False`` for any ERROR/MISSING node
and ``misparse=True`` when shell keywords show up as command words.
"""

from __future__ import annotations

import re
import threading

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

from .. import deadline
from ..ir import (
    MARK,
    SUBST_PREFIX,
    Assign,
    Command,
    FunctionDef,
    Group,
    ParseResult,
    Pipeline,
    Redirect,
    Sequence,
    Word,
)
from ..ir import Node as IRNode  # tree-sitter's own Node is the tree's

_LANGUAGE = Language(tree_sitter_bash.language())
_PARSER = Parser(_LANGUAGE)
_LOCAL = threading.local()  # a Parser is not safe to share between threads
# every symbol id whose node type is "word" (the grammar aliases several rules to it)
_WORD_IDS = frozenset(
    i
    for i in range(_LANGUAGE.node_kind_count)
    if _LANGUAGE.node_kind_for_id(i) == "word" and _LANGUAGE.node_kind_is_named(i)
)


_K_WORD, _K_RAW_STRING, _K_VERBATIM = 0, 1, 2
# symbol id -> how word() builds a leaf of that type (the ids of named nodes only)
_LEAF_KINDS = {
    i: {"word": _K_WORD, "raw_string": _K_RAW_STRING}.get(
        _LANGUAGE.node_kind_for_id(i) or "", _K_VERBATIM
    )
    for i in range(_LANGUAGE.node_kind_count)
    if _LANGUAGE.node_kind_is_named(i)
    and _LANGUAGE.node_kind_for_id(i)
    in (
        "word",
        "raw_string",
        "number",
        "variable_name",
        "test_operator",
        "regex",
        "extglob_pattern",
    )
}


_MAIN_THREAD = threading.main_thread()
# the pipeline-stage shortcut in ``_Builder.stmt`` (off in the equivalence tests)
_FAST_PATHS = True


def _parser() -> Parser:
    if threading.current_thread() is threading.main_thread():
        return _PARSER
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        p = _LOCAL.parser = Parser(_LANGUAGE)
    return p


KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for"}
    | {"in", "function", "select", "{", "}", "!", "[[", "]]"}
)
_GLOB_RE = re.compile(r"[*?\[]")
_ANSI_RE = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_DQ_ESC_RE = re.compile(r"\\([$`\"\\\n])")
_BS_RE = re.compile(r"\\(.)", re.S)

_NO_BACKGROUND: frozenset[int] = frozenset()
_STATEMENT_SKIP = frozenset({"comment", ";", "&", ";;", "\n", "&&", "||", "|", "|&"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})


def decode_ansi_c(body: str) -> str:
    """Decode the inside of ``$'...'`` the way bash does."""

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        c = e[0]
        try:
            if c == "x":
                return chr(int(e[1:], 16))
            if c in "uU":
                return chr(int(e[1:], 16))
            if c.isdigit():
                return chr(int(e, 8) & 0xFF)
            if c == "c":
                return chr(ord(e[1]) & 0x1F)
        except (ValueError, OverflowError):
            return e
        return _ANSI_SIMPLE.get(c, "\\" + e)

    return _ANSI_RE.sub(sub, body)


class _Builder:
    """Turns one tree into IR; keeps byte->char mapping and a depth budget."""

    __slots__ = (
        "bad",
        "checks",
        "depth",
        "err_span",
        "max_depth",
        "misparse",
        "off",
        "spilled",
        "src",
    )

    def __init__(self, src: str, parsed: str, data: bytes, max_depth: int) -> None:
        self.src = src  # text is always taken from the original; offsets from what was parsed
        self.off: list[int] | None = None
        if len(data) != len(parsed):
            off = [0] * (len(data) + 1)
            bi = 0
            for ci, ch in enumerate(parsed):
                n = len(ch.encode("utf-8"))
                for k in range(n):
                    off[bi + k] = ci
                bi += n
            off[bi] = len(src)
            self.off = off
        self.max_depth = max_depth
        self.depth = 0
        self.bad = ""
        self.err_span: tuple[int, int] | None = None
        self.misparse = False
        self.checks = True  # per-node error checks; off when the tree has no error at all
        # words tree-sitter put after a redirect's target, for the command that owns them
        self.spilled: list[Word] = []

    def span(self, n: Node) -> tuple[int, int]:
        if self.off is None:
            return (n.start_byte, n.end_byte)
        return (self.off[n.start_byte], self.off[n.end_byte])

    def text(self, n: Node) -> str:
        s, e = self.span(n)
        return self.src[s:e]

    # statements -------------------------------------------------------------------------
    def seq(self, parent: Node) -> Sequence:
        items: list[IRNode] = []
        bg: set[int] = set()
        for c in parent.children:
            t = c.type
            if t == "&":
                if items:
                    bg.add(len(items) - 1)
                continue
            if (
                t == "command"
                and self.depth < self.max_depth
                and not (self.checks and c.is_missing)
            ):
                # fast path for the usual statement: what stmt() does for a command
                self.depth += 1
                items.append(self.command(c))
                self.depth -= 1
                continue
            if t in _STATEMENT_SKIP or not c.is_named:
                if self.checks and c.is_missing:
                    self.error(c, "missing token")
                continue
            st = self.stmt(c)
            if st is not None:
                items.append(st)
        off = self.off  # ``self.span(parent)``, inline
        sp = (
            (parent.start_byte, parent.end_byte)
            if off is None
            else (off[parent.start_byte], off[parent.end_byte])
        )
        return Sequence(tuple(items), sp, frozenset(bg) if bg else _NO_BACKGROUND)

    def error(self, n: Node, why: str) -> None:
        if not self.bad:
            self.bad = why
            self.err_span = self.span(n)

    def stmt(self, n: Node) -> IRNode | None:
        self.depth += 1
        try:
            if self.depth > self.max_depth:
                self.error(n, "nesting too deep")
                return None
            t = n.type
            if self.checks and (n.is_error or n.is_missing):
                self.error(n, "syntax error")
                return self.seq(n)
            if t == "command":
                return self.command(n)
            if t == "pipeline":
                stages: list[IRNode] = []
                for c in n.named_children:
                    ct = c.type
                    if ct == "comment":
                        continue
                    if (
                        ct == "command"
                        and _FAST_PATHS
                        and self.depth < self.max_depth
                        and not (self.checks and c.is_missing)
                    ):
                        # what stmt() does for a command, as in seq()
                        self.depth += 1
                        stages.append(self.command(c))
                        self.depth -= 1
                        continue
                    s = self.stmt(c)
                    if s is not None:
                        stages.append(s)
                off = self.off  # ``self.span(n)``, inline
                sp = (
                    (n.start_byte, n.end_byte)
                    if off is None
                    else (off[n.start_byte], off[n.end_byte])
                )
                return Pipeline(tuple(stages), sp)
            if t == "list":
                return self.seq(n)
            if t == "redirected_statement":
                return self.redirected(n)
            if t in ("subshell", "compound_statement", "do_group"):
                body = self.seq(n).items
                return Group(
                    body,
                    self.span(n),
                    "subshell" if t == "subshell" else "group",
                    subshell=t == "subshell",
                )
            if t == "function_definition":
                name_n = n.child_by_field_name("name")
                body_n = n.child_by_field_name("body")
                fn_body = self.stmt(body_n) if body_n is not None else None
                name = self.text(name_n) if name_n is not None else ""
                return FunctionDef(name, fn_body or Sequence((), self.span(n)), self.span(n))
            if t == "negated_command":
                return Group(self.seq(n).items, self.span(n), "group")
            if t in ("variable_assignment", "variable_assignments"):
                assigns = self.assigns(n)
                return Command((), self.span(n), assigns)
            if t in ("declaration_command", "unset_command"):
                return self.declaration(n)
            if t == "test_command":
                return Group(self.inner_substs(n), self.span(n), "test")
            if t in (
                "if_statement",
                "elif_clause",
                "else_clause",
                "for_statement",
                "c_style_for_statement",
                "while_statement",
                "case_statement",
                "case_item",
            ):
                return self.compound(n)
            if t in ("heredoc_body", "heredoc_start", "heredoc_end"):
                return None
            # unknown statement-ish node: keep what is inside it
            return Group(self.seq(n).items, self.span(n), "other")
        finally:
            self.depth -= 1

    def compound(self, n: Node) -> Group:
        t = n.type
        kind = {
            "for_statement": "for",
            "c_style_for_statement": "for",
            "while_statement": "while",
            "case_statement": "case",
            "case_item": "case",
        }.get(t, "if")
        body: list[IRNode] = []
        words: list[Word] = []
        var = ""
        for c in n.named_children:
            ct = c.type
            if ct == "variable_name" and t == "for_statement":
                var = self.text(c)
            if ct == "comment" or ct == "variable_name":
                continue
            fname = None
            if kind in ("for", "case"):
                fname = n.field_name_for_named_child(n.named_children.index(c))
            if fname == "value" or (kind == "case" and ct in ("word", "extglob_pattern")):
                words.append(self.word(c))
                continue
            if c.is_error:
                self.error(c, "syntax error")
            st = self.stmt(c)
            if st is not None:
                body.append(st)
        if n.has_error:
            self._scan_errors(n)
        forever = t in ("while_statement", "c_style_for_statement") and self._forever(n)
        return Group(tuple(body), self.span(n), kind, tuple(words), var=var, forever=forever)

    def _forever(self, n: Node) -> bool:
        """Is this loop endless: a condition that cannot fail (``while true``, ``while :``,
        ``until false``, ``for ((;;))``) and a body that never leaves it?"""
        if n.type == "c_style_for_statement":
            if any(n.field_name_for_child(i) == "condition" for i in range(n.child_count)):
                return False
        else:
            until = n.children[0].type == "until"
            conds = [
                c
                for i, c in enumerate(n.children)
                if n.field_name_for_child(i) == "condition" and c.is_named
            ]
            endless = ("false",) if until else ("true", ":")
            if len(conds) != 1 or conds[0].type != "command":
                return False
            if self.text(conds[0]).strip() not in endless:
                return False
        stack = [c for c in n.children if c.type == "do_group"]
        while stack:
            c = stack.pop()
            if c.type == "command_name" and self.text(c) in ("break", "exit", "return"):
                return False
            stack.extend(c.children)
        return True

    def _scan_errors(self, n: Node) -> None:
        for c in n.children:
            if c.is_error or c.is_missing:
                self.error(c, "syntax error")
                return

    def inner_substs(self, n: Node) -> tuple[Sequence, ...]:
        """Command substitutions inside a test/arithmetic expression still run."""
        out: list[Sequence] = []
        stack = [n]
        while stack:
            x = stack.pop()
            if x.type in ("command_substitution", "process_substitution"):
                out.append(self.seq(x))
                continue
            if x.is_missing or x.is_error:
                self.error(x, "syntax error")
            stack.extend(x.children)
        return tuple(out)

    def redirected(self, n: Node) -> IRNode:
        body_n = n.child_by_field_name("body")
        redirects: list[Redirect] = []
        tail: list[IRNode] = []
        spilled_before = len(self.spilled)
        for c in n.children:
            if c.type in _REDIRECTS:
                r, extra, after = self.redirect(c)
                redirects.append(r)
                redirects.extend(after)
                tail.extend(extra)
            elif c.is_error or c.is_missing:
                self.error(c, "syntax error")
        spilled = tuple(self.spilled[spilled_before:])
        del self.spilled[spilled_before:]
        body = self.stmt(body_n) if body_n is not None else None
        if spilled and not isinstance(body, Command):
            self.error(n, "words after a redirect of a compound command")
        if isinstance(body, Command):
            body = Command(
                body.words + spilled,
                self.span(n),
                body.assigns,
                body.redirects + tuple(redirects),
                body.keyword_like,
            )
        elif body is None:
            body = Command((), self.span(n), (), tuple(redirects))
        else:
            body = _attach_redirects(body, tuple(redirects))
        if tail:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline off the here-doc
            first = body
            stages: list[IRNode] = [first]
            for x in tail:
                if isinstance(x, Pipeline):
                    stages.extend(x.stages)
                else:
                    stages.append(x)
            return Pipeline(tuple(stages), self.span(n))
        return body

    def redirect(self, n: Node) -> tuple[Redirect, list[IRNode], list[Redirect]]:
        """The redirect, the statements tree-sitter hangs off a here-doc (``cat <<EOF | sh``)
        and the redirects written after a here-doc's delimiter (``cat <<EOF > f``), which
        belong to the same command as the here-doc."""
        t = n.type
        extra: list[IRNode] = []
        after: list[Redirect] = []
        fd = ""
        op = ""
        target: Word | None = None
        body: Word | None = None
        if t == "heredoc_redirect":
            op = "<<"
            for c in n.children:
                ct = c.type
                if ct == "heredoc_body":
                    body = self.heredoc_body(c)
                elif ct == "heredoc_start":
                    target = Word(self.text(c).strip("'\"\\"), self.span(c))
                elif ct in ("<<", "<<-"):
                    op = ct
                elif ct in ("pipeline", "command", "list", "redirected_statement"):
                    st = self.stmt(c)
                    if st is not None:
                        extra.append(st)
                elif ct in _REDIRECTS:
                    # a redirect after the delimiter applies to the same command
                    r, more, more_after = self.redirect(c)
                    after.append(r)
                    after.extend(more_after)
                    extra.extend(more)
                elif c.is_error or c.is_missing:
                    self.error(c, "syntax error")
            return Redirect(op, target, self.span(n), fd, body), extra, after
        for c in n.children:
            ct = c.type
            if ct == "file_descriptor":
                fd = self.text(c)
            elif not c.is_named:
                if c.is_missing:
                    self.error(c, "missing token")
                else:
                    op += ct
            elif c.is_error:
                self.error(c, "syntax error")
            elif t == "herestring_redirect":
                body = self.word(c)
                target = None
            elif target is None:
                target = self.word(c)
            else:
                # ``rm 2>/dev/null -rf tests``: tree-sitter hangs the words after a redirect's
                # target off the redirect; they are the command's arguments
                self.spilled.append(self.word(c))
        span = self.span(n) if target is None else (self.span(n)[0], target.span[1])
        return Redirect(op or "?", target, span, fd, body), extra, after

    def heredoc_body(self, n: Node) -> Word:
        s, e = self.span(n)
        parts: list[str] = []
        substs: list[IRNode] = []
        pos = s
        for c in n.named_children:
            cs, ce = self.span(c)
            parts.append(self.src[pos:cs])
            if c.type in ("command_substitution", "process_substitution"):
                parts.append(MARK + SUBST_PREFIX + str(len(substs)) + MARK)
                substs.append(self.seq(c))
            elif c.type in ("simple_expansion", "expansion"):
                parts.append(MARK + self._exp_key(c) + MARK)
            else:
                parts.append(self.src[cs:ce])
            pos = ce
        parts.append(self.src[pos:e])
        return Word("".join(parts), (s, e), tuple(substs))

    def declaration(self, n: Node) -> Command:
        words: list[Word] = []
        assigns: list[Assign] = []
        for c in n.children:
            if c.type == "variable_assignment":
                assigns.extend(self.assigns(c))
            elif c.is_named:
                words.append(self.word(c))
            else:
                words.append(Word(self.text(c), self.span(c)))
        return Command(tuple(words), self.span(n), tuple(assigns))

    def assigns(self, n: Node) -> tuple[Assign, ...]:
        if n.type == "variable_assignments":
            out: list[Assign] = []
            for c in n.named_children:
                out.extend(self.assigns(c))
            return tuple(out)
        name_n = n.child_by_field_name("name")
        val_n = n.child_by_field_name("value")
        name = self.text(name_n) if name_n is not None else ""
        val = self.word(val_n) if val_n is not None else None
        if val_n is not None and val_n.type == "array":
            # ``p=(a b c)``: the elements, one word each, joined as the shell joins ${p[*]}
            items = [self.word(c) for c in val_n.named_children]
            if items and not any(w.substs or " " in w.text for w in items):
                val = Word(" ".join(w.text for w in items), self.span(val_n))
        append = any(c.type == "+=" for c in n.children)
        return (Assign(name, val, self.span(n), append),)

    def command(self, n: Node) -> Command:
        words: list[Word] = []
        assigns: list[Assign] = []
        redirects: list[Redirect] = []
        keyword_like = False
        src = self.src
        off = self.off
        checks = self.checks
        for c in n.children:
            # fast path (most children): a leaf argument (word, 'raw string', number) without
            # errors, built exactly as ``word()`` builds it
            k = _LEAF_KINDS.get(c.kind_id)
            # (a tree without errors has no MISSING nodes either: see ``checks``)
            if k is not None and not (checks and (c.is_missing or c.has_error)):
                if off is None:
                    sp = (c.start_byte, c.end_byte)
                else:
                    sp = (off[c.start_byte], off[c.end_byte])
                if k == _K_WORD:
                    raw = src[sp[0] : sp[1]]
                    glob = "*" in raw or "?" in raw or "[" in raw
                    if "\\" in raw:
                        raw = _BS_RE.sub(_bs_unescape, raw)
                    words.append(Word(raw, sp, (), glob))
                elif k == _K_RAW_STRING:
                    words.append(Word(src[sp[0] + 1 : sp[1] - 1], sp))
                else:
                    words.append(Word(src[sp[0] : sp[1]], sp))
                continue
            t = c.type
            if t == "command_name":
                inner = c.named_children
                x = inner[0] if len(inner) == 1 else None
                if (
                    x is not None
                    and x.kind_id in _WORD_IDS
                    and not x.is_missing
                    and not (checks and x.has_error)
                ):  # fast path: a plain word, as ``word()`` builds it
                    if off is None:
                        sp = (x.start_byte, x.end_byte)
                    else:
                        sp = (off[x.start_byte], off[x.end_byte])
                    raw = src[sp[0] : sp[1]]
                    glob = "*" in raw or "?" in raw or "[" in raw
                    if "\\" in raw:
                        raw = _BS_RE.sub(_bs_unescape, raw)
                    w = Word(raw, sp, (), glob)
                else:
                    w = self.word(x) if x is not None else self.word(c)
                if w.text in KEYWORDS and inner and inner[0].type == "word":
                    keyword_like = True
                    self.misparse = True
                words.append(w)
            elif t == "variable_assignment":
                assigns.extend(self.assigns(c))
            elif t in _REDIRECTS:
                spilled_before = len(self.spilled)
                r, extra, after = self.redirect(c)
                redirects.append(r)
                redirects.extend(after)
                for node in extra:
                    if isinstance(node, Command):
                        redirects.extend(node.redirects)
                words.extend(self.spilled[spilled_before:])
                del self.spilled[spilled_before:]
            elif t == "comment":
                continue
            elif c.is_error or c.is_missing:
                self.error(c, "syntax error")
            elif c.is_named:
                words.append(self.word(c))
        sp = (n.start_byte, n.end_byte) if off is None else (off[n.start_byte], off[n.end_byte])
        words = _rejoin_split_expansions(words, self.src)
        return Command(
            tuple(words),
            sp,
            tuple(assigns) if assigns else (),
            tuple(redirects) if redirects else (),
            keyword_like,
        )

    # words ------------------------------------------------------------------------------
    def _exp_key(self, n: Node) -> str:
        txt = self.text(n)
        if txt.startswith("${") and txt.endswith("}"):
            return txt[2:-1]
        return txt[1:]

    def word(self, n: Node) -> Word:
        t = n.type
        if self.off is None:
            sp = (n.start_byte, n.end_byte)
        else:
            sp = (self.off[n.start_byte], self.off[n.end_byte])
        if self.checks and n.has_error:
            self._scan_errors(n)
            if n.is_error or n.is_missing:
                self.error(n, "syntax error")
        if t == "word":
            raw = self.src[sp[0] : sp[1]]
            glob = "*" in raw or "?" in raw or "[" in raw
            if "\\" in raw:
                raw = _BS_RE.sub(_bs_unescape, raw)
            return Word(raw, sp, (), glob)
        if t == "raw_string":
            return Word(self.src[sp[0] + 1 : sp[1] - 1], sp)
        if t == "ansi_c_string":
            return Word(decode_ansi_c(self.src[sp[0] + 2 : sp[1] - 1]), sp)
        if t in ("number", "variable_name", "test_operator", "regex", "extglob_pattern"):
            return Word(self.src[sp[0] : sp[1]], sp)
        if t in ("simple_expansion", "expansion"):
            inner: list[IRNode] = []
            for c in n.named_children:
                if c.type in ("command_substitution", "process_substitution"):
                    inner.append(self.seq(c))
            return Word(MARK + self._exp_key(n) + MARK, sp, tuple(inner))
        if t in ("command_substitution", "process_substitution"):
            return Word(MARK + SUBST_PREFIX + "0" + MARK, sp, (self.seq(n),))
        if t == "arithmetic_expansion":
            return Word(MARK + "((" + MARK, sp, self.inner_substs(n))
        if t in ("string", "translated_string"):
            return self._dq(n, sp)
        if t == "concatenation" or t == "command_name":
            parts: list[str] = []
            substs: list[IRNode] = []
            glob = False
            for c in n.children:
                w = self.word(c)
                if w.substs:
                    base = len(substs)
                    txt = w.text
                    if base:
                        for i in range(len(w.substs) - 1, -1, -1):
                            txt = txt.replace(
                                MARK + SUBST_PREFIX + str(i) + MARK,
                                MARK + SUBST_PREFIX + str(base + i) + MARK,
                            )
                    parts.append(txt)
                    substs.extend(w.substs)
                else:
                    parts.append(w.text)
                glob = glob or w.glob
            return Word("".join(parts), sp, tuple(substs), glob)
        if t == "brace_expression":
            return Word(self.src[sp[0] : sp[1]], sp, (), True)
        if not n.is_named:
            return Word(self.src[sp[0] : sp[1]], sp)
        # array, etc.: keep its text, but collect substitutions inside it
        return Word(self.src[sp[0] : sp[1]], sp, self.inner_substs(n))

    def _dq(self, n: Node, sp: tuple[int, int]) -> Word:
        parts: list[str] = []
        substs: list[IRNode] = []
        pos = sp[0] + 1 if self.src[sp[0]] == '"' else sp[0] + 2
        end = sp[1] - 1
        for c in n.named_children:
            cs, ce = self.span(c)
            if cs > pos:
                parts.append(_DQ_ESC_RE.sub(r"\1", self.src[pos:cs]).replace("\\\n", ""))
            ct = c.type
            if ct == "string_content":
                parts.append(_DQ_ESC_RE.sub(_dq_unescape, self.src[cs:ce]))
            else:
                w = self.word(c)
                if w.substs:
                    txt = w.text.replace(
                        MARK + SUBST_PREFIX + "0" + MARK,
                        MARK + SUBST_PREFIX + str(len(substs)) + MARK,
                    )
                    parts.append(txt)
                    substs.extend(w.substs)
                else:
                    parts.append(w.text)
            pos = ce
        if end > pos:
            parts.append(_DQ_ESC_RE.sub(_dq_unescape, self.src[pos:end]))
        return Word("".join(parts), sp, tuple(substs))


def _bs_unescape(m: re.Match[str]) -> str:
    """Unquoted backslash: drop a line continuation, keep the escaped character."""
    c = m.group(1)
    return "" if c == "\n" else c


def _dq_unescape(m: re.Match[str]) -> str:
    c = m.group(1)
    return "" if c == "\n" else c


# tree-sitter-bash 0.25.1's scanner intermittently segfaults on characters outside the BMP
# (e.g. "5{\U000cc2b6"); lone surrogates are not valid UTF-8. Both are parsed as a plain word
# character; their text still comes from the original string, so normalisation sees them.
_UNSAFE_FOR_TS = re.compile("[\U00010000-\U0010ffff\ud800-\udfff]")


def parse(src: str, *, max_depth: int = 200) -> ParseResult:
    """Parse ``src``; never raises (a failure becomes ``ok=False``)."""
    try:
        parsed = src if src.isascii() else _UNSAFE_FOR_TS.sub("a", src)
        data = parsed.encode("utf-8")
        tree = _parse_bounded(
            _PARSER if threading.current_thread() is _MAIN_THREAD else _parser(), data
        )
        if tree is None:
            return ParseResult(None, False, "tree-sitter returned no tree")
        b = _Builder(src, parsed, data, max_depth)
        root = tree.root_node
        b.checks = root.has_error
        seq = b.seq(root)
        if root.has_error and not b.bad:
            b.bad = b.bad or "syntax error"
            b.err_span = b.err_span or _first_error_span(b, root)
        return ParseResult(seq, not b.bad, b.bad, b.err_span, b.misparse)
    except RecursionError:
        return ParseResult(None, False, "nesting too deep")
    except deadline.Expired:
        raise
    except Exception as exc:
        return ParseResult(None, False, f"tree-sitter front end failed: {type(exc).__name__}")


_BOUNDED_MIN_BYTES = 512  # shorter inputs parse in microseconds: no progress callback


def _parse_bounded(parser: Parser, data: bytes) -> Tree | None:
    """``parser.parse(data)`` within the analysis's time bound: tree-sitter asks its progress
    callback whether to stop (only when reading through a callback), and a stopped parse
    raises ``deadline.Expired`` here. The parser is reset, or it would resume that parse."""
    if len(data) < _BOUNDED_MIN_BYTES or not deadline.active():
        return parser.parse(data)
    try:
        return parser.parse(lambda offset, _point: data[offset:], progress_callback=_stop)
    except ValueError:
        parser.reset()
        if deadline.passed():
            raise deadline.Expired from None
        raise


def _stop(_offset: int, _has_error: bool) -> bool:
    return deadline.passed()


def _first_error_span(b: _Builder, root: Node) -> tuple[int, int]:
    stack = [root]
    while stack:
        x = stack.pop()
        if x.is_error or x.is_missing:
            return b.span(x)
        if x.has_error:
            stack.extend(reversed(x.children))
    return b.span(root)


_SIMPLE_EXPANSION = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


def _rejoin_split_expansions(words: list[Word], src: str) -> list[Word]:
    """tree-sitter-bash splits ``$h/$f/id_x`` into ``$h/$`` and ``f/id_x`` (two words where bash
    has one, the second ``$f`` lost). Two words that touch, the first ending in a bare ``$``,
    are one word again, its simple expansions read as such; anything else stays as parsed."""
    out: list[Word] = []
    for w in words:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.span[1] == w.span[0]
            and src[prev.span[1] - 1 : prev.span[1]] == "$"
        ):
            text = src[prev.span[0] : w.span[1]]
            if not any(c in text for c in "`'\"\\") and "$(" not in text:
                joined = _SIMPLE_EXPANSION.sub(lambda m: MARK + m.group(1) + MARK, text)
                glob = any(c in text for c in "*?[")
                out[-1] = Word(joined, (prev.span[0], w.span[1]), (), glob)
                continue
        out.append(w)
    return out


def _attach_redirects(body: IRNode, redirects: tuple[Redirect, ...]) -> IRNode:
    """Redirects tree-sitter hangs on a whole statement belong to its last command: bash reads
    ``a && b > f`` as ``a && (b > f)`` and ``a | b > f`` as ``a | (b > f)``, tree-sitter as
    ``(a && b) > f``. A group keeps them (``{ a; b; } > f`` redirects both)."""
    if not redirects:
        return body
    if isinstance(body, Command):
        return Command(
            body.words, body.span, body.assigns, body.redirects + redirects, body.keyword_like
        )
    if isinstance(body, Group):
        return Group(
            body.body,
            body.span,
            body.kind,
            body.words,
            body.redirects + redirects,
            body.subshell,
        )
    if isinstance(body, Pipeline) and body.stages:
        return Pipeline(
            (*body.stages[:-1], _attach_redirects(body.stages[-1], redirects)), body.span
        )
    if isinstance(body, Sequence) and body.items:
        last = _attach_redirects(body.items[-1], redirects)
        return Sequence((*body.items[:-1], last), body.span, body.background)
    return body
