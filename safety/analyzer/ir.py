"""The normalised shell IR both front ends produce.

Words are already quote-removed; every expansion inside a word is kept as a marker
``\\x00KEY\\x00`` so the resolver can substitute what it knows (``$HOME``, ``${TMPDIR:-/tmp}``,
variables assigned earlier) and treat the rest as dynamic. Spans are character offsets into the
original command string (never bytes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

MARK = "\x00"
SUBST_PREFIX = "$("  # marker key prefix for command/process substitutions: "$(<index>"

Span = tuple[int, int]


# Hot internal structure (built several times per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Word:
    """One shell word after quote removal; expansions are markers, substitutions are nested."""

    text: str
    span: Span
    substs: tuple[Node, ...] = ()
    glob: bool = False  # unquoted glob characters present

    @property
    def dynamic(self) -> bool:
        return MARK in self.text


@dataclass(frozen=True, slots=True)
class Assign:
    name: str
    value: Word | None
    span: Span
    append: bool = False  # ``x+=more``: the value is added to what ``x`` holds


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirect; ``op`` is the operator text, ``body`` the here-doc or here-string content."""

    op: str
    target: Word | None
    span: Span
    fd: str = ""
    body: Word | None = None


# Hot internal structure (built once or more per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Command:
    """A simple command: assignments, words (argv before resolution) and redirects."""

    words: tuple[Word, ...]
    span: Span
    assigns: tuple[Assign, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    keyword_like: bool = False  # tree-sitter gave a shell keyword as the command word


# Hot internal structure (built for every pipeline per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Pipeline:
    stages: tuple[Node, ...]
    span: Span


# Hot internal structure (built at least once per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Sequence:
    """Statements run in order; ``background`` marks the indices followed by ``&``."""

    items: tuple[Node, ...]
    span: Span
    background: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class Group:
    """Subshell ``( )``, brace group ``{ }``, or any compound (if/for/while/case) body list."""

    body: tuple[Node, ...]
    span: Span
    kind: str = "group"  # subshell | group | if | for | while | case | test | other
    words: tuple[Word, ...] = ()  # for-in values, case subject: evaluated, not executed
    redirects: tuple[Redirect, ...] = ()
    subshell: bool = False
    var: str = ""  # for-in: the loop variable (``words`` are its values)
    # a loop with no way out: ``while true``/``while :``/``until false``/``for ((;;))`` whose
    # body never runs ``break``, ``exit`` or ``return``
    forever: bool = False


@dataclass(frozen=True, slots=True)
class FunctionDef:
    name: str
    body: Node
    span: Span


Node = Command | Pipeline | Sequence | Group | FunctionDef


# Hot internal structure (built once or more per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class ParseResult:
    """What a front end read: the IR plus whether (and why) it could not read it cleanly."""

    root: Sequence | None
    ok: bool
    error: str = ""
    error_span: Span | None = None
    misparse: bool = False  # tree-sitter: shell keywords as command words
    words: tuple[tuple[str, Span], ...] | None = None  # command words only (cheap cross-check)


def iter_commands(node: Node | None) -> Iterator[Command]:
    """Every simple command in source order, including those inside substitutions."""
    if node is None:
        return
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Command):
            yield n
            subs: list[Node] = []
            for w in n.words:
                subs.extend(w.substs)
            for a in n.assigns:
                if a.value is not None:
                    subs.extend(a.value.substs)
            for r in n.redirects:
                if r.target is not None:
                    subs.extend(r.target.substs)
                if r.body is not None:
                    subs.extend(r.body.substs)
            stack.extend(reversed(subs))
        elif isinstance(n, Pipeline):
            stack.extend(reversed(n.stages))
        elif isinstance(n, Sequence):
            stack.extend(reversed(n.items))
        elif isinstance(n, Group):
            subs = [s for w in n.words for s in w.substs]
            stack.extend(reversed(list(n.body) + subs))
        elif isinstance(n, FunctionDef):
            stack.append(n.body)
