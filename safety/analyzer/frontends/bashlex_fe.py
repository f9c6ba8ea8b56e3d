"""bashlex front end (GPL-3.0-or-later): the cross-check parser.

bashlex is a port of bash's own yacc grammar, so when it reads a command its idea of which
commands run is close to bash's. It does not implement ``[[ ]]``, ``$(( ))``, ``case``, arrays,
``select``, ``coproc`` or quoted here-doc delimiters and raises on them; those gaps are *not*
findings. It is kept behind this module so a deployment can drop it (``use_bashlex=False``).
What that trades away: the parser-disagreement check, i.e. catching the commands tree-sitter
silently mis-reads without an error node (a class of evasion the keyword-signature check only
partly covers). Everything else, including every rule, keeps working on tree-sitter alone.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

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
    Word,
)
from ..ir import Node as IRNode
from ..ir import Sequence as Seq

try:  # pragma: no cover - import guard
    import bashlex
    import bashlex.errors

    AVAILABLE = True
except Exception:
    bashlex = None
    AVAILABLE = False


# bashlex has no type hints: its parse-tree nodes (``bashlex.ast.node``, attributes by kind) and
# positions (``(start, end)``) are ``Any`` here.
BashlexNode = Any
_ParamExpand = Callable[[Any, str, int], Any]


def _guard_unterminated_brace(paramexpand: _ParamExpand) -> _ParamExpand:
    """bashlex 0.18 loops forever, growing memory, on ``${`` with no ``}`` left in its word
    (e.g. ``echo '${'x``): ``str.find`` returns -1 and expansion restarts at the word's start.
    Bash reports a bad substitution there, so say that instead (found by ``make fuzz``)."""

    def guarded(parserobj: Any, string: str, sindex: int) -> Any:
        if string[sindex + 1 : sindex + 2] == "{" and string.find("}", sindex + 2) == -1:
            raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, sindex)
        return paramexpand(parserobj, string, sindex)

    return guarded


def _bounded_token(token: Callable[..., Any]) -> Callable[..., Any]:
    """bashlex reads its input, nested substitutions too, one ``tokenizer.token`` at a time:
    there the analysis's time bound is checked (``deadline.check``), so a pathological input
    stops within the bound without a timer signal. (A single token costs at most its
    characters, which ``max_chars`` bounds.)"""

    def bounded(self: Any) -> Any:
        deadline.check()
        return token(self)

    return bounded


if AVAILABLE:
    import bashlex.subst
    import bashlex.tokenizer

    bashlex.subst._paramexpand = _guard_unterminated_brace(bashlex.subst._paramexpand)
    bashlex.tokenizer.tokenizer.token = _bounded_token(bashlex.tokenizer.tokenizer.token)

_PARAM_RE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
_LOCK = threading.Lock()  # bashlex keeps module-level parser state


class _Budget(Exception):
    pass


_SRC = threading.local()


def _single_quoted(start: int, pos: int) -> bool:
    """Is ``pos`` inside single quotes, scanning the source from ``start``? (bashlex reports
    substitutions inside single-quoted assignment values, which bash never runs)."""
    src: str = getattr(_SRC, "text", "")
    inside = False
    dq = False
    i = start
    while i < pos and i < len(src):
        c = src[i]
        if c == "\\" and not inside:
            i += 2
            continue
        if c == "'" and not dq:
            inside = not inside
        elif c == '"' and not inside:
            dq = not dq
        i += 1
    return inside


def _word(n: BashlexNode, depth: int) -> Word:
    text = n.word
    substs: list[IRNode] = []
    for p in getattr(n, "parts", ()) or ():
        if p.kind in ("commandsubstitution", "processsubstitution"):
            if _single_quoted(n.pos[0], p.pos[0]):
                continue
            substs.append(_seq([p.command], p.pos, depth + 1))
    if "$" in text or "`" in text:
        text = _PARAM_RE.sub(lambda m: MARK + m.group(0).lstrip("${").rstrip("}") + MARK, text)
        if substs:
            text = re.sub(r"\$\(.*\)|`[^`]*`", MARK + SUBST_PREFIX + "0" + MARK, text, flags=re.S)
    return Word(text, tuple(n.pos), tuple(substs))


def _seq(nodes: list[BashlexNode], pos: Any, depth: int) -> Seq:
    items: list[IRNode] = []
    bg: set[int] = set()
    for n in nodes:
        if n.kind == "operator":
            if n.op == "&" and items:
                bg.add(len(items) - 1)
            continue
        x = _node(n, depth + 1)
        if x is not None:
            items.append(x)
    return Seq(tuple(items), tuple(pos), frozenset(bg))


def _node(n: BashlexNode, depth: int) -> IRNode | None:
    if depth > 150:
        raise _Budget
    k = n.kind
    if k == "command":
        words: list[Word] = []
        redirects: list[Redirect] = []
        assigns: list[Assign] = []
        for p in n.parts:
            if p.kind == "word":
                words.append(_word(p, depth))
            elif p.kind == "assignment":
                name, _, _ = p.word.partition("=")
                append = name.endswith("+")
                assigns.append(Assign(name.rstrip("+"), _word(p, depth), tuple(p.pos), append))
            elif p.kind == "redirect":
                out = p.output
                tgt = _word(out, depth) if hasattr(out, "kind") and out.kind == "word" else None
                body = None
                if getattr(p, "heredoc", None) is not None:
                    v = p.heredoc.value
                    body = Word(
                        v.rsplit("\n", 1)[0] + "\n" if "\n" in v else v, tuple(p.heredoc.pos)
                    )
                redirects.append(Redirect(p.type, tgt, tuple(p.pos), "", body))
        return Command(tuple(words), tuple(n.pos), tuple(assigns), tuple(redirects))
    if k == "pipeline":
        stages = [_node(p, depth + 1) for p in n.parts if p.kind != "pipe"]
        return Pipeline(tuple(s for s in stages if s is not None), tuple(n.pos))
    if k == "list":
        return _seq(n.parts, n.pos, depth)
    if k == "compound":
        inner = [p for p in n.list if p.kind != "reservedword"]
        return Group(_seq(inner, n.pos, depth).items, tuple(n.pos), "group")
    if k in ("if", "for", "while", "until"):
        inner = [p for p in n.parts if p.kind not in ("reservedword", "word", "operator")]
        loop_words = tuple(_word(p, depth) for p in n.parts if p.kind == "word")
        return Group(_seq(inner, n.pos, depth).items, tuple(n.pos), k, loop_words)
    if k == "function":
        fn_body = _node(n.body, depth + 1)
        return FunctionDef(n.name.word, fn_body or Seq((), tuple(n.pos)), tuple(n.pos))
    if k in ("reservedword", "operator", "pipe"):
        return None
    return None


_SKIP = frozenset({"[", "[[", "test", "time", "!", "{", "}", "coproc", "function"})


def _command_words(trees: list[BashlexNode]) -> tuple[tuple[str, tuple[int, int]], ...]:
    """Just the command words (normalised like ``engine._command_words``), without building IR."""
    out: list[tuple[str, tuple[int, int]]] = []
    stack = list(reversed(trees))
    while stack:
        n = stack.pop()
        k = n.kind
        if k == "command":
            first = True
            for p in n.parts:
                pk = p.kind
                if pk == "word":
                    if first:
                        first = False
                        t = p.word
                        if "$" in t or "`" in t:
                            t = "$"
                        elif "/" in t.rstrip("/"):
                            t = t.rsplit("/", 1)[-1]
                        if t not in _SKIP:
                            out.append((t, tuple(p.pos)))
                    _push_substs(p, stack)
                elif pk == "assignment":
                    _push_substs(p, stack)
                elif pk == "redirect":
                    o = p.output
                    if hasattr(o, "kind"):
                        _push_substs(o, stack)
        elif k in ("pipeline", "list", "if", "for", "while", "until"):
            for p in reversed(n.parts):
                if p.kind == "word":
                    _push_substs(p, stack)
                elif p.kind not in ("reservedword", "operator", "pipe"):
                    stack.append(p)
        elif k == "compound":
            stack.extend(reversed([p for p in n.list if p.kind != "reservedword"]))
        elif k == "function":
            stack.append(n.body)
    return tuple(out)


def _push_substs(w: BashlexNode, stack: list[BashlexNode]) -> None:
    parts = getattr(w, "parts", None)
    if not parts:
        return
    for p in parts:
        if p.kind in ("commandsubstitution", "processsubstitution"):
            if not _single_quoted(w.pos[0], p.pos[0]):
                stack.append(p.command)
        elif p.kind in ("word", "parameter"):
            _push_substs(p, stack)


def parse(
    src: str, *, max_depth: int = 150, max_chars: int = 20000, build_ir: bool = True
) -> ParseResult:
    """Parse with bashlex; every exception it can raise becomes ``ok=False``.

    With ``build_ir=False`` only the command words are extracted (the cross-check needs no more).
    """
    if not AVAILABLE:
        return ParseResult(None, False, "bashlex unavailable")
    if len(src) > max_chars:
        return ParseResult(None, False, "too long for bashlex")
    if _nesting(src) > max_depth // 3:
        return ParseResult(None, False, "nesting too deep for bashlex")
    try:
        with _LOCK:
            trees = bashlex.parse(src)
        _SRC.text = src
        if not build_ir:
            return ParseResult(None, True, words=_command_words(list(trees)))
        return ParseResult(_seq(list(trees), (0, len(src)), 0), True)
    except deadline.Expired:
        return ParseResult(None, False, "bashlex timed out")
    except _Budget:
        return ParseResult(None, False, "nesting too deep")
    except RecursionError:
        return ParseResult(None, False, "nesting too deep")
    except Exception as exc:
        return ParseResult(None, False, f"bashlex: {type(exc).__name__}")


def _nesting(src: str) -> int:
    """Cheap upper bound on bracket nesting, to keep bashlex's recursion bounded."""
    depth = best = 0
    for ch in src:
        if ch in "({":
            depth += 1
            best = max(best, depth)
        elif ch in ")}":
            depth -= 1
    return best
