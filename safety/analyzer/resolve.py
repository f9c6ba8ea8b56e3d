"""Resolve the IR into the commands that would actually run.

One pass over the IR (O(size) plus nested strings, each bounded by ``max_depth``): it substitutes
what it knows (``~``, ``$HOME``, ``${TMPDIR:-/tmp}``, variables assigned earlier, ``$(echo x)``,
``$(pwd)``, ``$(mktemp)``), tracks ``cd``, aliases and functions defined earlier in the same
command, unwraps wrappers (sudo, env, xargs, find -exec ...), re-parses strings run by a shell
(``sh -c``, ``eval``, here-docs fed to a shell) and scans inline interpreter code. Whatever it
cannot resolve is reported as a *signal* for the analyzer's fail-closed rules.
"""

from __future__ import annotations

import base64
import fnmatch
import operator
import posixpath
import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import deadline
from .frontends import treesitter_fe
from .ir import (
    MARK,
    SUBST_PREFIX,
    Command,
    FunctionDef,
    Group,
    Node,
    Pipeline,
    Redirect,
    Sequence,
    Span,
    Word,
)
from .vocabulary import GLOB_CHARS

if TYPE_CHECKING:
    from .config import AnalyzerConfig
    from .policy import Resolution

DYN = "\x00?\x00"  # an unknown value inside a resolved string
# What stands for an unknown value in everything the analyzer gives out (findings, resolved
# argv, effects). DYN and MARK never leave the package: NUL is refused by PostgreSQL's jsonb
# and text columns and invisible on a page. Inside, rules keep matching on DYN, which input
# text cannot spell (the engine replaces a NUL in the input first).
SHOWN_DYN = "$?"
CODE_VIA = "code"  # last ``via`` of a command standing for an interpreter pattern's effect
_MARK_RE = re.compile("\x00([^\x00]*)\x00")
_HIDDEN_RE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\u00ad\u180e]")
_GIT_EXEC_KEY = re.compile(
    r"(?i)^(core\.(pager|editor|sshcommand|fsmonitor|askpass|hookspath)|alias\..+|.+\.textconv|"
    r"diff\.external|credential\.helper|sequence\.editor|gpg\.program|filter\..+\.(clean|smudge|"
    r"process)|pager\..+|uploadpack\.packobjectshook|merge\..+\.driver|diff\..+\.command)$"
)
# inline code asking where installed packages live (``site.getsitepackages()``, ``m.__file__``)
# short options clustered in one word, the last the output option: ``-so FILE``, ``-sSLo FILE``
_SHORT_CLUSTER_OUTPUT = re.compile(r"-[A-Za-z]+[oO]")
# directories on a usual PATH (``tool`` runs ``/usr/local/bin/tool``)
_PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# the ``via`` of the stand-in for an endless loop (``while true; do ...; done``)
LOOP_VIA = "endless-loop"
_SITE_QUERY = re.compile(r"getsitepackages|getusersitepackages|get_paths|__file__|purelib|__path__")
DYN_SITE = "__module__"  # stands for the module file such a query names
# an installed module file: what a path computed from a module's location stands for
SITE_STANDIN = "/usr/local/lib/python3/site-packages/" + DYN_SITE
_TEXT = operator.attrgetter("text")
_SPAN = operator.attrgetter("span")
_SUBSTS = operator.attrgetter("substs")
_FETCHERS = frozenset(
    {"curl", "wget", "aria2c", "axel", "fetch", "http", "https", "xh", "xhs", "curlie"}
)
_TEMP_VARS = frozenset({"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
# Shortcuts that skip general code when it provably does nothing (or inline a call); the
# equivalence tests in tests/safety_core/test_fast_paths.py turn them off to compare.
_FAST_PATHS = True
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete"})
_COMPILERS = frozenset({"gcc", "cc", "clang", "g++", "c++", "clang++", "tcc", "rustc"})
_SCRIPT_CHARS = 20_000  # a written script longer than this is not followed when run
_FOR_VALUES = 8  # a for loop's body is followed once per value up to this many values
# names ``Resolver.emit`` handles itself (besides wrappers, shells, interpreters, functions)
_EMIT_SPECIAL = _FETCHERS | {
    "cd",
    "pushd",
    "alias",
    "unset",
    "unalias",
    "find",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "git",
    "rg",
    "ripgrep",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "npm",
    "eval",
    "source",
    ".",
}


# Hot internal structure (built for every redirect per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
def decoded_literal(producer: tuple[str, ...], decoder: tuple[str, ...]) -> str | None:
    """``echo TEXT | base64 -d`` (or ``printf``, ``xxd -r -p``): the text it decodes to, so a
    path or URL hidden in an encoding is judged as what it is; None when it is not that shape
    or the result is not plain text."""
    if len(producer) < 2 or producer[0] not in ("echo", "printf") or not decoder:
        return None
    words = [w for w in producer[1:] if w not in ("-n", "-e", "%s")]
    if len(words) != 1 or DYN in words[0]:
        return None
    text = words[0].strip()
    try:
        if decoder[0] == "base64" and set(decoder[1:]) & {"-d", "--decode", "-D"}:
            raw = base64.b64decode(text, validate=True)
        elif decoder[0] == "xxd" and "-r" in decoder and "-p" in decoder:
            raw = bytes.fromhex(text)
        else:
            return None
        out = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    if not out.isprintable() and not all(c.isprintable() or c in "\n\t" for c in out):
        return None
    return out.rstrip("\n")


@dataclass(slots=True, unsafe_hash=True)
class RRedirect:
    """A resolved redirect: ``path`` is absolute and normalised, or None when unknown."""

    op: str
    path: str | None
    raw: str
    span: Span
    fd: str = ""
    body: str | None = None


# Hot internal structure (built once or more per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Cmd:
    """A simple command that would run, with its argv resolved as far as statically possible."""

    argv: tuple[str, ...]
    spans: tuple[Span, ...]
    span: Span
    cwd: str | None
    redirects: tuple[RRedirect, ...] = ()
    upstream: tuple[tuple[str, ...], ...] = ()  # argv of commands feeding its stdin / program
    stdin_body: str | None = None
    via: tuple[str, ...] = ()
    assigns: tuple[tuple[str, str], ...] = ()
    raw_name: str = ""
    var_reads: tuple[str, ...] = ()  # names of the variables its words expand ($TOKEN, ${X:-y})

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""


def shown(text: str) -> str:
    """``text`` as given out: each unknown value as ``SHOWN_DYN``, any other marker as ``?``."""
    if MARK not in text:
        return text
    return text.replace(DYN, SHOWN_DYN).replace(MARK, "?")


def shown_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` as given out (the same tuple when nothing in it is marked)."""
    for a in argv:
        if MARK in a:
            return tuple([shown(x) for x in argv])
    return argv


@dataclass(frozen=True, slots=True)
class Signal:
    """Something the resolver could not see through; rules in the ``analyzer`` category."""

    name: str
    span: Span
    detail: str = ""


@dataclass(slots=True)
class _State:
    cwd: str | None
    env: dict[str, str | None]
    taint: dict[str, tuple[tuple[str, ...], ...]]
    aliases: dict[str, str]
    # name -> (definition, base and fixed span of the text it was defined in)
    functions: dict[str, tuple[FunctionDef, int, Span | None]]
    downloads: dict[str, tuple[str, ...]] = field(default_factory=dict)  # path -> fetch argv
    # path -> the known text a command on this line wrote there (a script it may run next)
    scripts: dict[str, str] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(
            self.cwd,
            dict(self.env),
            dict(self.taint),
            dict(self.aliases),
            dict(self.functions),
            self.downloads,
            self.scripts,
        )


# Hot internal structure (built once or more per analysed command): a frozen
# dataclass's __init__ sets each field through object.__setattr__, about 4x slower, so
# this is a plain slotted dataclass. It is never mutated after construction; eq and hash
# are those of the frozen version (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class _Ctx:
    via: tuple[str, ...] = ()
    base: int = -1  # >= 0: inner offset + base = outer offset
    fixed: Span | None = None  # all spans collapse to this outer span
    depth: int = 0
    upstream: tuple[tuple[str, ...], ...] = ()
    stdin_body: str | None = None
    calls: tuple[str, ...] = ()
    positional: tuple[str, ...] | None = None
    in_pipe: bool = False


def _basename(name: str) -> str:
    if "/" in name and not name.endswith("/"):
        return name.rsplit("/", 1)[1]
    return name


def _var_names(text: str) -> tuple[str, ...]:
    """The variables a word expands: ``${TOKEN:-x}`` and ``$TOKEN`` both name ``TOKEN``."""
    out: list[str] = []
    for key in _MARK_RE.findall(text):
        if key.startswith(SUBST_PREFIX):
            continue
        name = re.split(r"[:#%/^,@\[=+?-]", key.lstrip("#!"), maxsplit=1)[0]
        if name:
            out.append(name)
    return tuple(out)


def normalize_text(s: str) -> str:
    """NFKC, drop invisible format characters: what a reader would take the text to say."""
    if s.isascii():
        return s
    s = _HIDDEN_RE.sub("", s)
    return unicodedata.normalize("NFKC", s)


def _xargs_replace_token(opts: list[str]) -> str | None:
    for k, a in enumerate(opts):
        if a == "-I" and k + 1 < len(opts):
            return opts[k + 1]
        if a.startswith("-I") and len(a) > 2:
            return a[2:]
        if a in ("-i", "--replace"):
            return "{}"
        if a.startswith(("--replace=", "-i")) and len(a) > 2:
            return a.split("=", 1)[1] if "=" in a else a[2:]
    return None


def _xargs_words(upstream: tuple[tuple[str, ...], ...]) -> list[str]:
    """What xargs appends: the words an ``echo``/``printf`` of literals right before it
    prints (``echo --all | xargs git log``), else one word of ``_xargs_input``."""
    last = upstream[-1] if upstream else ()
    if last and last[0] in ("echo", "printf") and not any(DYN in a for a in last):
        words = [a for a in last[1:] if a not in ("-n", "-e", "-E")]
        text = " ".join(words)
        if words and (last[0] == "echo" or not ("%" in text or "\\" in text)):
            return text.split()
    return [_xargs_input(upstream)]


def _xargs_input(upstream: tuple[tuple[str, ...], ...]) -> str:
    """What xargs appends: paths under a ``find`` start, names from ``ls``, else unknown."""
    for up in upstream:
        if up and up[0] == "find":
            start = up[1] if len(up) > 1 and not up[1].startswith(("-", "(", "!")) else "."
            names = [up[k + 1] for k in range(len(up) - 1) if up[k] in ("-name", "-iname")]
            leaf = "**/" + names[0] if len(names) == 1 and "/" not in names[0] else "{}"
            return start.rstrip("/") + "/" + leaf
        if up and (up[0] == "ls" or (up[0] == "git" and "ls-files" in up)):
            rest = up[up.index("ls-files") + 1 :] if up[0] == "git" else up[1:]
            dirs = [a for a in rest if not a.startswith("-")]
            if dirs and (any(c in dirs[0] for c in "*?[") or "." in posixpath.basename(dirs[0])):
                return dirs[0]  # ``ls tests/*.py``: the files it names
            return (dirs[0].rstrip("/") if dirs else ".") + "/{}"
    return DYN


_CONCAT_RE = re.compile(r"""(['"])((?:(?!\1)[^\\\n])*)\1\s*\+\s*(['"])((?:(?!\3)[^\\\n])*)\3""")
_JOIN_RE = re.compile(
    r"""\[\s*((?:['"][^'"\n]*['"]\s*,\s*)*['"][^'"\n]*['"])\s*\]\.join\(\s*(['"])([^'"\n]*)\2\s*\)"""
)
_IMPORT_CALL_RE = re.compile(
    r"""(?:__import__|importlib\.import_module)\(\s*['"]([\w.]+)['"]\s*\)"""
)
_GETATTR_RE = re.compile(r"""\bgetattr\(\s*([\w.]+)\s*,\s*['"](\w+)['"]\s*\)""")


# variables whose value another program runs as a command line
PROGRAM_VARS = frozenset(
    {"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "PAGER", "EDITOR", "VISUAL", "MANPAGER",
     "GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXTERNAL_DIFF", "LESSOPEN",
     "SUDO_ASKPASS", "BROWSER", "PROMPT_COMMAND"}
)  # fmt: skip


_PY_EVAL_CALL = re.compile(r"(?:exec|eval)\s*\(")
_PY_CALL = re.compile(r"[\w.]+\s*\(")
_PY_EXEC_LITERAL_RE = re.compile(
    r"""\b(?:exec|eval)\(\s*[rbuf]?(['"])((?:(?!\1)[^\\\n])+)\1\s*\)"""
)


# options that take a library or directory where the policy's code flags (``-r`` is PHP's
# code) would read a program
_LIBRARY_FLAGS = {"ruby": frozenset({"-r", "-I"}), "perl": frozenset({"-I", "-M", "-m"})}


def code_argument(argv: list[str] | tuple[str, ...], code_flags: frozenset[str]) -> int | None:
    """Where the program text of ``python -c CODE``, ``node -e CODE``, ``ruby -r lib -e CODE``
    is in ``argv`` (None: no code flag before the first operand, or nothing after it)."""
    program = posixpath.basename(argv[0]).rstrip("0123456789.") if argv else ""
    library = _LIBRARY_FLAGS.get(program)
    i = 1
    while i < len(argv):
        a = argv[i]
        if library and a in library:
            i += 2  # a library to load, not the program
            continue
        if a in code_flags or (
            a.startswith("-") and not a.startswith("--") and a[-1] in "ce" and len(a) <= 4
        ):
            return i + 1 if i + 1 < len(argv) else None
        if not a.startswith("-"):
            return None
        i += 1
    return None


# ``''.join(map(chr, [99, 97, 116]))``, ``''.join(chr(c) for c in [...])``, Perl's
# ``pack("H*", "726d")`` and ``pack("C*", 114, 109)``: a string spelled as numbers
_CHAR_CODES_RE = re.compile(
    r"""['"]['"]\.join\(\s*(?:map\(\s*chr\s*,\s*|chr\(\s*\w+\s*\)\s*for\s+\w+\s+in\s+)"""
    r"""[\[(]([\d\s,]+)[\])]\s*\)|\bpack\(\s*['"]C\*['"]\s*,\s*([\d\s,]+)\)"""
)
_PACK_HEX_RE = re.compile(r"""\bpack\(\s*['"]H\*['"]\s*,\s*['"]([0-9A-Fa-f]+)['"]\s*\)""")


def _as_literal(text: str | None, spelled: str) -> str:
    """``text`` as a quoted literal in place of the code that ``spelled`` it; the spelling
    itself when it is not plain printable text (or holds a quote or a backslash)."""
    if text is None or not text.isprintable() or "'" in text or "\\" in text:
        return spelled
    return "'" + text + "'"


def _from_codes(m: re.Match[str]) -> str:
    """The literal a ``_CHAR_CODES_RE`` match spells."""
    codes = [int(c) for c in re.findall(r"\d+", m.group(1) or m.group(2))]
    if any(c >= 0x110000 for c in codes):
        return m.group(0)
    return _as_literal("".join(chr(c) for c in codes), m.group(0))


def _from_hex(m: re.Match[str]) -> str:
    """The literal Perl's ``pack("H*", HEX)`` spells."""
    try:
        return _as_literal(bytes.fromhex(m.group(1)).decode("utf-8"), m.group(0))
    except ValueError:
        return m.group(0)


# ``base64.b64decode('...').decode()``, ``bytes.fromhex('...').decode()``, ``Buffer.from('...',
# 'base64').toString()``: a string literal spelled in an encoding
_DECODED_RE = re.compile(
    r"""(?:base64\.b64decode|bytes\.fromhex|Buffer\.from)\(\s*[rb]?(['"])([A-Za-z0-9+/=\s]+)\1"""
    r"""\s*(?:,\s*['"](base64|hex)['"]\s*)?\)\s*\.(?:decode|toString)\(\s*(?:['"][\w-]*['"])?\s*\)"""
)


def _decoded_string(m: re.Match[str]) -> str:
    """The literal a ``_DECODED_RE`` match decodes to, quoted; the match itself if it is not
    printable text or holds a quote."""
    text, kind = m.group(2).strip(), m.group(3)
    try:
        hexed = m.group(0).startswith("bytes.fromhex") or kind == "hex"
        raw = bytes.fromhex(text) if hexed else base64.b64decode(text, validate=True)
        return _as_literal(raw.decode("utf-8"), m.group(0))
    except ValueError:  # UnicodeDecodeError is one
        return m.group(0)


def fold_code(code: str) -> str:
    """Code with the spellings that only hide a name or a string put back together:
    ``"r" + "m -rf"`` is ``"rm -rf"``, ``['rm','-rf'].join(' ')`` is ``'rm -rf'``,
    ``__import__('os')`` and ``importlib.import_module('os')`` are ``os``, a literal decoded
    from base64 or hex is that literal, and ``getattr(os, 'system')`` is ``os.system``. Never
    runs anything."""
    if len(code) > 200_000:
        return code

    def concat(m: re.Match[str]) -> str:
        q, text = m.group(1), m.group(2) + m.group(4)
        if q in m.group(4):
            return m.group(0)  # the other quote inside: leave it as written
        return q + text + q

    for _ in range(50):
        folded = _CONCAT_RE.sub(concat, code)
        if folded == code:
            break
        code = folded

    def join(m: re.Match[str]) -> str:
        items = re.findall(r"""['"]([^'"\n]*)['"]""", m.group(1))
        return "'" + m.group(3).join(items) + "'"

    code = _JOIN_RE.sub(join, code)
    code = _IMPORT_CALL_RE.sub(lambda m: m.group(1), code)
    code = _DECODED_RE.sub(_decoded_string, code)
    code = _CHAR_CODES_RE.sub(_from_codes, code)
    code = _PACK_HEX_RE.sub(_from_hex, code)
    for _ in range(5):
        folded = _GETATTR_RE.sub(lambda m: m.group(1) + "." + m.group(2), code)
        if folded == code:
            break
        code = folded
    return code


def _literal_output(cmds: list[Cmd]) -> str | None:
    """What ``echo``/``printf`` with literal words prints, as the next stage's stdin
    (``echo 'CODE' | python3`` runs CODE as ``python3 -c`` would); None for anything else."""
    if len(cmds) != 1:
        return None
    c = cmds[0]
    # ``cat <<'EOF' | python3``: the here-document is what the next stage reads
    heredoc_only = all(rd.op.startswith("<<") for rd in c.redirects)
    if c.argv in (("cat",), ("cat", "-")) and c.stdin_body is not None and heredoc_only:
        return c.stdin_body
    if c.redirects:
        return None
    return _printed(c.argv)


def _printed(argv: tuple[str, ...]) -> str | None:
    """What ``echo``/``printf`` with literal words prints (None for anything else)."""
    if not argv or argv[0] not in ("echo", "printf") or any(DYN in a for a in argv):
        return None
    words = list(argv[1:])
    if argv[0] == "echo":
        while words and words[0] in ("-n", "-e", "-E", "-ne", "-en"):
            words.pop(0)
        text = " ".join(words)
    else:
        if not words or words[0].startswith("-"):
            return None
        text = words[0]
    if "-e" in argv[1:2] or argv[0] == "printf":
        text = text.replace("\\n", "\n").replace("\\t", "\t")
    return text + "\n"


# git's options before the subcommand that take the next word (``git -C dir log``)
_GIT_GLOBAL_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)


_PRINTF_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|0?[0-7]{1,3}|[nt\\])")


def _printf_text(fmt: str) -> str | None:
    r"""What ``printf FORMAT`` prints when its escapes are hex, octal, ``\n``, ``\t`` or
    ``\\`` (None for any other escape): a word spelled by number is judged as the word."""
    if "\\" in fmt and _PRINTF_ESCAPE.sub("", fmt).count("\\"):
        return None

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8))
        return {"n": "\n", "t": "\t", "\\": "\\"}[e]

    out = _PRINTF_ESCAPE.sub(one, fmt)
    return out if out.isprintable() or set(out) <= set(string.printable) else None


def _trimmed(value: str, op: str, pattern: str) -> str | None:
    """``${f%.txt}``, ``${f%%.*}``, ``${p#*/}``, ``${p##*/}``: the shortest (one sign) or longest
    (two) prefix (#) or suffix (%) matching the glob removed; None for a pattern we cannot read."""
    if "$" in pattern or "`" in pattern:
        return None
    rx = re.compile(fnmatch.translate(pattern.replace("\\", "")))  # * spans / here
    cuts = range(len(value) + 1)
    if op.startswith("%"):
        order = cuts if op == "%%" else reversed(cuts)
        for i in order:
            if rx.fullmatch(value[i:]):
                return value[:i]
    else:
        order = reversed(cuts) if op == "##" else cuts
        for i in order:
            if rx.fullmatch(value[:i]):
                return value[i:]
    return value


def _is_array_expansion(text: str) -> bool:
    """A word that is only ``${name[@]}`` or ``${name[*]}``: it stands for all the elements."""
    m = _MARK_RE.fullmatch(text)
    return m is not None and re.fullmatch(r"\w+\[[@*]\]", m.group(1)) is not None


def git_sub(argv: list[str] | tuple[str, ...]) -> tuple[str, int]:
    """git's subcommand (after git's own options) and the index of the word after it;
    ("", len(argv)) when there is none."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in _GIT_GLOBAL_WITH_VALUE:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return a, i + 1
    return "", len(argv)


def _git_program(key: str, value: str) -> str:
    """The shell text a git setting runs: an alias without ``!`` is a git command line."""
    if key.lower().startswith("alias.") and not value.startswith("!"):
        return "git " + value
    return value.lstrip("!")


def abspath(p: str, cwd: str | None, home: str) -> str | None:
    """Absolute normalised path, or None when unknown (dynamic, or relative to an unknown cwd)."""
    if not p or DYN in p:
        return None
    if p[0] == "~":
        p = home + p[1:] if p == "~" or p.startswith("~/") else "/home/" + p[1:]
    if p[0] != "/":
        if cwd is None:
            return None
        p = cwd + "/" + p
    out = posixpath.normpath(p)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out


@dataclass(slots=True)
class Resolver:
    """Walks one parsed command; collects ``cmds`` and ``signals``."""

    res: Resolution
    config: AnalyzerConfig
    src: str
    cmds: list[Cmd] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    budget: int = 5000

    # spans ----------------------------------------------------------------------------------
    def sp(self, s: Span, ctx: _Ctx) -> Span:
        if ctx.fixed is not None:
            return ctx.fixed
        if ctx.base >= 0:
            return (s[0] + ctx.base, s[1] + ctx.base)
        return s

    def signal(self, name: str, span: Span, ctx: _Ctx, detail: str = "") -> None:
        self.signals.append(Signal(name, self.sp(span, ctx), detail))

    # walking -------------------------------------------------------------------------------
    def run(self, root: Sequence) -> None:
        # the command starts in the first workspace root (a ``/workspace/*`` root names no
        # folder of its own: the start is not known)
        start = next((r for r in self.config.workspace_roots[:1] if not r.endswith("*")), None)
        st = _State(start, {}, {}, {}, {})
        self.walk(root, st, _Ctx())

    def walk(self, node: Node, st: _State, ctx: _Ctx) -> list[Cmd]:
        self.budget -= 1
        if not self.budget & 31:
            deadline.check()  # the command's time bound, every 32 nodes
        if self.budget < 0:
            if self.budget == -1:
                self.signal("too-complex", (0, len(self.src)), _Ctx())
            return []
        if isinstance(node, Command):
            return self.command(node, st, ctx)
        if isinstance(node, Sequence):
            out: list[Cmd] = []
            bg = node.background
            for i, item in enumerate(node.items):
                if type(item) is Command and i not in bg and _FAST_PATHS:
                    # what ``self.walk(item, st, ctx)`` does for a command, without the call
                    self.budget -= 1
                    if not self.budget & 31:
                        deadline.check()
                    if self.budget < 0:
                        if self.budget == -1:
                            self.signal("too-complex", (0, len(self.src)), _Ctx())
                        continue
                    out.extend(self.command(item, st, ctx))
                elif i in bg and isinstance(item, (Pipeline, Command, Group)):
                    c2 = _Ctx(
                        ctx.via,
                        ctx.base,
                        ctx.fixed,
                        ctx.depth,
                        ctx.upstream,
                        ctx.stdin_body,
                        ctx.calls,
                        ctx.positional,
                        True,
                    )
                    out.extend(self.walk(item, st, c2))
                else:
                    out.extend(self.walk(item, st, ctx))
            return out
        if isinstance(node, Pipeline):
            produced: list[Cmd] = []
            upstream = ctx.upstream
            fed: str | None = ctx.stdin_body
            for stage in node.stages:
                c2 = _Ctx(
                    ctx.via,
                    ctx.base,
                    ctx.fixed,
                    ctx.depth,
                    upstream,
                    fed,
                    ctx.calls,
                    ctx.positional,
                    len(node.stages) > 1 or ctx.in_pipe,
                )
                if type(stage) is Command and _FAST_PATHS:
                    # what ``self.walk(stage, st.copy(), c2)`` does for a command
                    self.budget -= 1
                    if not self.budget & 31:
                        deadline.check()
                    if self.budget < 0:
                        if self.budget == -1:
                            self.signal("too-complex", (0, len(self.src)), _Ctx())
                        cmds = []
                    else:
                        cmds = self.command(stage, st.copy(), c2)
                else:
                    cmds = self.walk(stage, st.copy(), c2)
                produced.extend(cmds)
                upstream = upstream + tuple([c.argv for c in cmds if c.argv])
                fed = _literal_output(cmds)
            return produced
        if isinstance(node, Group):
            inner = st.copy() if node.subshell else st
            out = []
            values = [self.word(w, inner, ctx)[0] for w in node.words]
            if node.var:
                return self.for_loop(node, values, inner, ctx)
            body_stdin = ctx.stdin_body
            files: list[RRedirect] = []
            for r in node.redirects:
                rr = self.redirect(r, inner, ctx)
                if rr.body is not None:
                    body_stdin = rr.body
                elif rr.path is not None:
                    files.append(rr)
            if files:
                # ``while read l; ...; done < ~/.netrc``, ``{ ...; } > tests/x.py``: the
                # group's own redirects open their files once, as a command's would
                sp = self.sp(node.span, ctx)
                opened = Cmd((), (), sp, inner.cwd, tuple(files), via=ctx.via)
                self.cmds.append(opened)
                out.append(opened)
            c2 = ctx
            if body_stdin is not ctx.stdin_body:
                c2 = _Ctx(
                    ctx.via,
                    ctx.base,
                    ctx.fixed,
                    ctx.depth,
                    ctx.upstream,
                    body_stdin,
                    ctx.calls,
                    ctx.positional,
                    ctx.in_pipe,
                )
            for item in node.body:
                out.extend(self.walk(item, inner, c2))
            if node.forever:
                # an endless loop holds the machine like ``sleep infinity``: judged as one
                sp = self.sp(node.span, ctx)
                loop = Cmd(("sleep", "infinity"), (sp,), sp, inner.cwd,
                           via=(*ctx.via, LOOP_VIA), raw_name="while")  # fmt: skip
                self.cmds.append(loop)
                out.append(loop)
            return out
        if isinstance(node, FunctionDef):
            st.functions[node.name] = (node, ctx.base, ctx.fixed)
            self.check_fork_bomb(node, ctx)
            # the body is analysed where it is called; also once here so an unused body with
            # `rm -rf /` in it is still seen
            c2 = _Ctx(
                (*ctx.via, "function"),
                ctx.base,
                ctx.fixed,
                ctx.depth,
                (),
                None,
                (*ctx.calls, node.name),
                (),
                False,
            )
            self.walk(node.body, st.copy(), c2)
            return []
        return []

    def for_loop(self, node: Group, values: list[str], st: _State, ctx: _Ctx) -> list[Cmd]:
        """``for v in a b; do ...; done``: the body once per known value (a glob stays one
        value, ``*.pyc``), or once with ``v`` unknown when the values are not known."""
        known = values and len(values) <= _FOR_VALUES and all(DYN not in v for v in values)
        runs: list[str | None] = list(values) if known else [None]
        out: list[Cmd] = []
        for v in runs:
            st.env[node.var] = v
            st.taint.pop(node.var, None)
            stripped = Group(node.body, node.span, node.kind, (), node.redirects, node.subshell, "")
            out.extend(self.walk(stripped, st, ctx))
        return out

    def check_fork_bomb(self, fn: FunctionDef, ctx: _Ctx) -> None:
        """A function that starts copies of itself in a pipeline or in the background."""
        stack: list[tuple[Node, bool]] = [(fn.body, False)]
        while stack:
            n, hot = stack.pop()
            if isinstance(n, Command):
                if hot and n.words and n.words[0].text == fn.name:
                    self.signal("fork-bomb", fn.span, ctx, fn.name)
                    return
            elif isinstance(n, Pipeline):
                many = len(n.stages) > 1
                stack.extend((s, hot or many) for s in n.stages)
            elif isinstance(n, Sequence):
                stack.extend((s, hot or i in n.background) for i, s in enumerate(n.items))
            elif isinstance(n, Group):
                stack.extend((s, hot) for s in n.body)

    # words --------------------------------------------------------------------------------
    def word(self, w: Word, st: _State, ctx: _Ctx) -> tuple[str, tuple[tuple[str, ...], ...]]:
        """Resolved text (unknown parts as DYN) and the argv of commands producing its value."""
        text = w.text
        producers: tuple[tuple[str, ...], ...] = ()
        values: list[str | None] = []
        for sub in w.substs:
            c2 = _Ctx(
                (*ctx.via, "$()"),
                ctx.base,
                ctx.fixed,
                ctx.depth,
                (),
                None,
                ctx.calls,
                ctx.positional,
                False,
            )
            cmds = self.walk(sub, st.copy(), c2)
            producers += tuple(c.argv for c in cmds if c.argv)
            values.append(self.fold(cmds, st))
        if MARK not in text:
            return text, producers

        def sub_(m: re.Match[str]) -> str:
            nonlocal producers
            key = m.group(1)
            if key.startswith(SUBST_PREFIX):
                try:
                    v = values[int(key[2:])]
                except (ValueError, IndexError):
                    v = None
                return DYN if v is None else v
            v2, taint = self.var(key, st, ctx)
            producers += taint
            return DYN if v2 is None else v2

        return _MARK_RE.sub(sub_, text), producers

    def fold(self, cmds: list[Cmd], st: _State) -> str | None:
        """The output of a substitution when it is statically known (echo, pwd, mktemp)."""
        if len(cmds) == 2:
            return decoded_literal(cmds[0].argv, cmds[1].argv)
        if len(cmds) != 1:
            return None
        a = cmds[0].argv
        if not a:
            return None
        n = a[0]
        if n == "echo" and all(DYN not in x for x in a[1:]):
            return " ".join(x for x in a[1:] if x not in ("-n", "-e"))
        if n == "printf" and all(DYN not in x for x in a[1:]):
            if len(a) == 2 and "%" not in a[1]:
                return _printf_text(a[1])  # ``printf '\x73\x75\x64\x6f'`` is ``sudo``
            if len(a) == 3 and a[1] == "%s":
                return a[2]
            fmt = a[1] if len(a) > 2 else ""
            slots = re.findall(r"%[sd]", fmt)
            if len(slots) == len(a) - 2 and fmt.count("%") == len(slots):
                # ``printf 'https://%s/%s' host path``, ``printf '%d.%d' 169 254``: each
                # directive takes the next word (%d only an integer)
                out = fmt
                for slot, word in zip(slots, a[2:], strict=True):
                    if slot == "%d" and not word.lstrip("-").isdigit():
                        return None
                    out = out.replace(slot, str(int(word)) if slot == "%d" else word, 1)
                return out if "\\" not in out else None
        if n == "pwd":
            return st.cwd
        if n in ("basename", "dirname") and len(a) == 2 and DYN not in a[1]:
            path = a[1].rstrip("/") or "/"
            return posixpath.basename(path) if n == "basename" else posixpath.dirname(path)
        if n == "mktemp":
            t = self.config.temp_roots
            return (t[0] if t else "/tmp") + "/tmp.mktemp"  # noqa: S108 - a name, not a file
        # where an installed program or module lives: not its real path, but one of the same
        # kind (an installed executable, a file under site-packages), which is what rules judge
        if (
            n in ("which", "command", "type")
            and len(a) >= 2
            and DYN not in a[-1]
            and (n == "which" or a[1] in ("-v", "-p", "-P"))
        ):
            return "/usr/local/bin/" + _basename(a[-1])
        if n.startswith("python") and len(a) >= 3 and a[1] == "-c" and _SITE_QUERY.search(a[2]):
            return SITE_STANDIN
        return None

    def substituted(
        self, m: re.Match[str], st: _State, ctx: _Ctx
    ) -> tuple[str | None, tuple[tuple[str, ...], ...]]:
        r"""``${f/#\~/$HOME}``: a literal pattern replaced at the start (#), the end (%), everywhere
        (//) or once; a glob pattern or an unknown value is unknown."""
        value, taint = self.var(m.group(1), st, ctx)
        pattern = m.group(3).replace("\\", "")
        repl = m.group(4)
        if repl.startswith("$") and re.fullmatch(r"\$\{?\w+\}?", repl):
            repl = self.var(repl.strip("${}"), st, ctx)[0] or DYN
        if value is None or "$" in repl or GLOB_CHARS & set(pattern) or not pattern:
            return None, taint
        mode = m.group(2)
        if mode == "#":
            out = repl + value[len(pattern) :] if value.startswith(pattern) else value
        elif mode == "%":
            out = value[: -len(pattern)] + repl if value.endswith(pattern) else value
        else:
            out = value.replace(pattern, repl, -1 if mode == "/" else 1)
        return out, taint

    def var(
        self, key: str, st: _State, ctx: _Ctx
    ) -> tuple[str | None, tuple[tuple[str, ...], ...]]:
        name = key
        default: str | None = None
        for op in (":-", ":=", "-", "="):
            if op in key:
                name, default = key.split(op, 1)
                if MARK in default or "$" in default:
                    default = None
                break
        if name.startswith("#") or not name:
            return None, ()
        swap = re.fullmatch(r"(\w+)/([#%/]?)([^/]*)/(.*)", key)
        if swap is not None:
            return self.substituted(swap, st, ctx)
        trim = re.fullmatch(r"(\w+)(##?|%%?)(.+)", key)
        if trim is not None:
            value, taint = self.var(trim.group(1), st, ctx)
            return (_trimmed(value, trim.group(2), trim.group(3)) if value else None), taint
        index = re.fullmatch(r"(\w+)\[(@|\*|\d+)\]", name)
        if index is not None and index.group(1) in st.env:
            # ``${p[@]}`` of an array assigned on this line (elements joined with spaces)
            whole = st.env[index.group(1)]
            if whole is None or index.group(2) in ("@", "*"):
                return whole, st.taint.get(index.group(1), ())
            items = whole.split()
            k = int(index.group(2))
            return (items[k] if k < len(items) else None), st.taint.get(index.group(1), ())
        if name.endswith(("@P", "@E")) or "@P}" in key:
            self.signal("prompt-expansion", (0, len(self.src)), _Ctx(), key)
            return None, ()
        if name in st.env:
            v = st.env[name]
            return (v if v is not None else default), st.taint.get(name, ())
        if ctx.positional is not None and name in ("@", "*"):
            return (" ".join(ctx.positional) if ctx.positional else None), ()
        if ctx.positional is not None and name.isdigit() and name != "0":
            i = int(name) - 1
            return (ctx.positional[i] if i < len(ctx.positional) else default), ()
        if name == "HOME":
            return self.config.home, ()
        if name in ("PWD",):
            return st.cwd, ()
        if name in _TEMP_VARS:
            return (default or (self.config.temp_roots or ("/tmp",))[0]), ()  # noqa: S108
        if name == "USER":
            return "root", ()
        return default, ()

    def path(self, p: str, cwd: str | None) -> str | None:
        return abspath(p, cwd, self.config.home)

    def redirect(
        self, r: Redirect, st: _State, ctx: _Ctx, feeds: list[tuple[str, ...]] | None = None
    ) -> RRedirect:
        """The redirect resolved. The commands whose output a here-string or here-document
        feeds to stdin (``bash <<< "$(curl ...)"``) are added to ``feeds``: they are upstream
        of the command as a pipe's are."""
        raw = ""
        path = None
        fed: tuple[tuple[str, ...], ...] = ()
        if r.target is not None:
            raw, prod = self.word(r.target, st, ctx)
            if r.op == "<<<":
                fed += prod
            if r.op not in ("<<", "<<-") and not (r.op.endswith("&") and raw.isdigit()):
                path = self.path(raw, st.cwd) if raw != "-" else None
        body = None
        if r.body is not None:
            body, prod = self.word(r.body, st, ctx)
            fed += prod
        if feeds is not None and fed:
            feeds.extend(fed)
        return RRedirect(r.op, path, raw, self.sp(r.span, ctx), r.fd, body)

    # commands -----------------------------------------------------------------------------
    def command(self, c: Command, st: _State, ctx: _Ctx) -> list[Cmd]:
        feeds: list[tuple[str, ...]] = []
        redirects = (
            tuple(self.redirect(r, st, ctx, feeds) for r in c.redirects) if c.redirects else ()
        )
        assigns: list[tuple[str, str]] = []
        for a in c.assigns:
            prod: tuple[tuple[str, ...], ...]
            if a.value is None:
                val, prod = "", ()
            else:
                val, prod = self.word(a.value, st, ctx)
            if a.append:
                before = st.env.get(a.name, "") if a.name in st.env else DYN
                val = DYN if before is None else before + val
            assigns.append((a.name, val))
            if a.name in PROGRAM_VARS and c.words:
                self.program_var(a.name, val, self.sp(a.span, ctx), st, ctx)
            if not c.words or c.words[0].text in (
                "export",
                "declare",
                "local",
                "readonly",
                "typeset",
            ):
                st.env[a.name] = None if DYN in val else val
                if prod:
                    st.taint[a.name] = prod
                elif a.name in st.taint:
                    del st.taint[a.name]
        words = c.words
        producers: tuple[tuple[str, ...], ...] = tuple(feeds)
        var_reads: tuple[str, ...] = ()
        # the common case: literal words, read with C-level attribute getters
        argv: list[str] = list(map(_TEXT, words))
        if any(map(_SUBSTS, words)) or MARK in "".join(argv):
            for i, w in enumerate(words):
                if w.substs or MARK in w.text:
                    if MARK in w.text:
                        # names this command text assigned are its own, not the environment's
                        var_reads += tuple(n for n in _var_names(w.text) if n not in st.env)
                    t, prod = self.word(w, st, ctx)
                    argv[i] = t
                    if prod:
                        producers += prod
        if ctx.fixed is None and ctx.base < 0:  # ``self.sp`` is the identity
            spans: list[Span] = list(map(_SPAN, words))
            span = c.span
        else:
            spans = [self.sp(w.span, ctx) for w in words]
            span = self.sp(c.span, ctx)
        stdin_body = ctx.stdin_body
        for r in redirects:
            if r.body is not None:
                stdin_body = r.body
        if not argv:
            cmd = Cmd(
                (), (), span, st.cwd, redirects, ctx.upstream, stdin_body, ctx.via, tuple(assigns)
            )
            self.cmds.append(cmd)
            return [cmd]
        arrays = [_is_array_expansion(w.text) for w in words]
        name_expanded = bool(_MARK_RE.fullmatch(words[0].text))
        if (name_expanded or any(arrays)) and any(" " in a or "\t" in a for a in argv):
            # ``x="rm -rf tests"; $x``: a program name taken from a variable is split into
            # words, as the shell splits an unquoted expansion (a name with spaces in it runs
            # nothing); so are the other words that are whole expansions (``$cmd $args``),
            # and an array's elements always are (``"${files[@]}"``)
            split_argv: list[str] = []
            split_spans: list[Span] = []
            for i, (arg, sp) in enumerate(zip(argv, spans, strict=True)):
                whole = arrays[i] or (name_expanded and _MARK_RE.fullmatch(words[i].text))
                whole = bool(whole) and DYN not in arg
                parts = (arg.split() if whole else None) or [arg]
                split_argv.extend(parts)
                split_spans.extend([sp] * len(parts))
            argv, spans = split_argv, split_spans
        if c.words[0].glob is False and argv[0] in st.aliases and c.words[0].text == argv[0]:
            expanded = self.alias_words(st.aliases[argv[0]], st, ctx)
            if expanded:
                argv = expanded + argv[1:]
                spans = [spans[0]] * len(expanded) + spans[1:]
        if argv[0] == "git":
            argv, spans = self.git_alias(argv, spans, st)
        return self.emit(
            argv,
            spans,
            span,
            st,
            ctx,
            redirects,
            stdin_body,
            tuple(assigns),
            producers,
            c,
            var_reads,
        )

    def git_alias(
        self, argv: list[str], spans: list[Span], st: _State
    ) -> tuple[list[str], list[Span]]:
        """``git config alias.co checkout`` then ``git co origin/main -- src``: the alias is
        recorded (under ``git.``) and a later git command that uses it is read expanded. An
        alias that runs a shell (``!``) was read when it was set (``git_config_program``)."""
        sub, after = git_sub(argv)
        if not sub:
            return argv, spans
        k = after - 1
        if argv[k] == "config":
            ops = [a for a in argv[k + 1 :] if not a.startswith("-")]
            if len(ops) >= 2 and ops[0].lower().startswith("alias.") and DYN not in ops[0]:
                st.aliases["git." + ops[0][6:]] = ops[1]
            return argv, spans
        value = st.aliases.get("git." + argv[k])
        if value is None or value.startswith("!"):
            return argv, spans
        words = value.split()
        new_spans = spans[:k] + [spans[k]] * len(words) + spans[k + 1 :]
        return argv[:k] + words + argv[k + 1 :], new_spans

    def alias_words(self, value: str, st: _State, ctx: _Ctx) -> list[str]:
        pr = treesitter_fe.parse(value, max_depth=self.config.max_depth)
        if pr.root is None or not pr.root.items or not isinstance(pr.root.items[0], Command):
            return []
        return [self.word(w, st, ctx)[0] for w in pr.root.items[0].words]

    def emit(
        self,
        argv: list[str],
        spans: list[Span],
        span: Span,
        st: _State,
        ctx: _Ctx,
        redirects: tuple[RRedirect, ...] = (),
        stdin_body: str | None = None,
        assigns: tuple[tuple[str, str], ...] = (),
        producers: tuple[tuple[str, ...], ...] = (),
        node: Command | None = None,
        var_reads: tuple[str, ...] = (),
    ) -> list[Cmd]:
        res = self.res
        raw_name = argv[0]
        # unicode / hidden characters in the command word and flags (one C-level test for the
        # usual all-ASCII argv)
        if not "".join(argv).isascii():
            for i, a in enumerate(argv):
                if not a.isascii():
                    norm = normalize_text(a)
                    if norm != a and (i == 0 or a.startswith("-") or _HIDDEN_RE.search(a)):
                        self.signal("hidden-characters", spans[i], _Ctx(), repr(a))
                    argv[i] = norm
        name = argv[0]
        if DYN in name:
            self.signal("dynamic-command-name", spans[0], _Ctx())
            cmd = Cmd(
                tuple(argv),
                tuple(spans),
                span,
                st.cwd,
                redirects,
                ctx.upstream + producers,
                stdin_body,
                ctx.via,
                assigns,
                raw_name,
                var_reads,
            )
            self.cmds.append(cmd)
            return [cmd]
        base = _basename(name) if "/" in name else name
        if base != name and base:
            argv[0] = base
        if base not in res.known_names:
            low = base.lower()
            if low != base and low in res.known_names:
                self.signal("hidden-characters", spans[0], _Ctx(), "case variation")
                argv = [x.lower() for x in argv]
                base = low
        name = base
        if name == "git" and "--help" in argv and "-c" not in argv:
            end = argv.index("--") if "--" in argv else len(argv)
            if "--help" in argv[1:end]:
                # ``git fetch --help`` opens the manual page of ``fetch``, nothing else
                argv, spans = [argv[0], "--help"], [spans[0], spans[argv.index("--help")]]
        upstream = ctx.upstream + producers
        cmd = Cmd(
            tuple(argv),
            tuple(spans),
            span,
            st.cwd,
            redirects,
            upstream,
            stdin_body,
            ctx.via,
            assigns,
            raw_name,
            var_reads,
        )
        self.cmds.append(cmd)
        out = [cmd]
        # the usual command: no state change, nothing it runs, no function, no download to
        # follow; every branch below needs one of these (the depth signal too). A ``find``
        # without -exec/-delete runs nothing either.
        if (
            _FAST_PATHS
            and (name not in _EMIT_SPECIAL or (name == "find" and _FIND_ACTIONS.isdisjoint(argv)))
            and not st.downloads
            and not st.scripts
            and not (redirects and name in ("echo", "printf", "cat"))
            and not (
                (redirects or name in _COMPILERS) and any(u and u[0] in _FETCHERS for u in upstream)
            )
            and name not in st.functions
            and name not in res.wrappers
            and name not in res.shells
            and name not in res.interpreters
        ):
            return out
        if ctx.depth >= self.config.max_depth:
            if name in res.wrappers or name in res.shells or name == "eval":
                self.signal("too-deep", span, _Ctx())
            return out
        deeper = ctx.depth + 1
        if name == "env":
            for i, a in enumerate(argv[1:], 1):
                key, eq, val = a.partition("=")
                if eq and key in PROGRAM_VARS:
                    self.program_var(key, val, spans[i], st, ctx)
        if name in _FETCHERS:
            self.note_download(argv, redirects, st)
        elif (redirects or name in _COMPILERS) and any(u and u[0] in _FETCHERS for u in upstream):
            # ``curl URL | base64 -d > x``, ``curl URL | gcc -x c -o x -``: what the last stage
            # writes (or compiles) is the download too
            fetch = next(u for u in upstream if u and u[0] in _FETCHERS)
            outs = [r.path for r in redirects if r.op in (">", ">|") and r.fd in ("", "1")]
            if name in _COMPILERS and "-o" in argv[:-1]:
                outs.append(self.path(argv[argv.index("-o") + 1], st.cwd))
            for p in outs:
                if p:
                    st.downloads[p] = tuple(fetch)
        elif st.downloads:
            self.run_download(argv, spans, span, st, ctx, assigns)
        if name in ("echo", "printf", "cat") and redirects:
            self.note_script(argv, redirects, stdin_body, st)
        elif st.scripts and (name in self.res.shells or name in ("source", ".") or "/" in raw_name):
            self.run_script(raw_name if "/" in raw_name else name, argv, spans, st, ctx)
        # state-changing builtins
        if name in ("cd", "pushd"):
            args = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
            if not args:
                st.cwd = self.config.home
            elif args[0] == "-":
                st.cwd = None
            else:
                st.cwd = self.path(args[0], st.cwd)
            return out
        if name == "alias":
            for a in argv[1:]:
                if "=" in a:
                    k, v = a.split("=", 1)
                    st.aliases[k] = v
            return out
        if name in ("unset", "unalias"):
            return out
        # functions defined earlier
        defined = st.functions.get(name)
        if defined is not None:
            if name in ctx.calls:
                return out
            # the body's spans are offsets in the text that defined it, not the caller's
            fn, def_base, def_fixed = defined
            c2 = _Ctx(
                (*ctx.via, name + "()"),
                def_base,
                def_fixed,
                deeper,
                upstream,
                stdin_body,
                (*ctx.calls, name),
                tuple(argv[1:]),
                ctx.in_pipe,
            )
            self.walk(fn.body, st.copy(), c2)
            return out
        # wrappers: the wrapped command runs too
        w = res.wrappers.get(name)
        if w is not None:
            inner = self.unwrap(name, w, argv, spans, st, upstream)
            if inner is not None:
                iargv, ispans, mode = inner
                c2 = _Ctx(
                    (*ctx.via, name),
                    ctx.base,
                    ctx.fixed,
                    deeper,
                    upstream,
                    stdin_body,
                    ctx.calls,
                    ctx.positional,
                    ctx.in_pipe,
                )
                if mode == "string":
                    self.shell_string(" ".join(iargv), ispans[0] if ispans else span, st, c2, name)
                elif iargv:
                    self.emit(
                        list(iargv),
                        list(ispans),
                        span,
                        st,
                        c2,
                        redirects,
                        stdin_body,
                        (),
                        (),
                        None,
                        var_reads,
                    )
            return out
        if name == "find":
            self.find(argv, spans, span, st, ctx, deeper)
            return out
        if name in ("git", "rg", "ripgrep", "ssh", "scp", "sftp", "rsync", "npm"):
            self.hidden_exec(name, argv, spans, span, st, ctx, deeper)
        # strings and streams run by a shell
        if name in res.shells:
            self.shell(argv, spans, span, st, ctx, deeper, stdin_body, node)
            return out
        if name == "eval":
            code = " ".join(argv[1:])
            c2 = _Ctx(
                (*ctx.via, "eval"),
                ctx.base,
                ctx.fixed,
                deeper,
                upstream,
                None,
                ctx.calls,
                ctx.positional,
                ctx.in_pipe,
            )
            if (
                producers
                and code.strip() == DYN
                and all(self.res.in_class("shell-setup", p) for p in producers)
            ):
                # ``eval "$(pyenv init -)"``: a tool whose documented output is shell setup
                return out
            if code.strip() == DYN or (DYN in code and not producers):
                self.signal("eval-dynamic", span, _Ctx())  # ``span`` is already outer
            self.shell_string(
                code,
                spans[1] if len(spans) > 1 else span,
                st,
                c2,
                "eval",
                exact=len(argv) == 2
                and node is not None
                and len(node.words) == 2
                and not node.words[1].text.startswith(MARK),
            )
            return out
        if name in ("source", "."):
            if len(argv) > 1 and node is not None and len(node.words) > 1 and node.words[1].substs:
                # source <(curl ...): the producer's output is the program
                cmd2 = Cmd(
                    ("bash",),
                    (spans[0],),
                    span,
                    st.cwd,
                    (),
                    upstream,
                    None,
                    (*ctx.via, name),
                    (),
                    name,
                )
                self.cmds.append(cmd2)
            return out
        if name in res.interpreters:
            self.interpreter(argv, spans, span, st, ctx, deeper, stdin_body)
        elif name in ("awk", "gawk", "mawk", "nawk"):
            self.awk_program(argv, spans, st, ctx, deeper)
        return out

    def note_download(self, argv: list[str], redirects: tuple[RRedirect, ...], st: _State) -> None:
        """Remember files a fetcher writes, so running them later counts as running a download."""
        out: list[str] = [r.raw for r in redirects if r.op in (">", ">|") and r.path]
        # curl's -O takes no value (the file is named after the URL); wget's -O names the file
        letters = ("-o",) if argv[0] == "curl" else ("-o", "-O")
        for i, a in enumerate(argv[1:], 1):
            if (a in letters or a in ("--output", "--output-document")) and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(("--output=", "--output-document=")):
                out.append(a.split("=", 1)[1])
            elif a.startswith(letters) and len(a) > 2 and a[1] != "-" and a[2] != "-":
                out.append(a[2:])
            elif (
                _SHORT_CLUSTER_OUTPUT.fullmatch(a)
                and i + 1 < len(argv)
                and (argv[0] != "curl" or a.endswith("o"))
            ):
                # clustered short options ending in the output option (``curl -sSLo FILE``)
                out.append(argv[i + 1])
        if not out and not any(r.op in (">", ">>", ">|") for r in redirects):
            # curl -O (-LO, --remote-name) and a wget without -O save under the URL's own name
            remote_name = argv[0] == "wget" or any(
                a in ("--remote-name", "--remote-name-all")
                or (a[:1] == "-" and a[1:2] != "-" and "O" in a[1:])
                for a in argv[1:]
            )
            for u in argv[1:] if remote_name else ():
                where = u.split("://", 1)[1] if "://" in u and DYN not in u else ""
                if "/" in where:
                    out.append(posixpath.basename(where.split("?", 1)[0].split("#", 1)[0]))
        for f in out:
            p = self.path(f, st.cwd) if f != "-" else None
            if p is not None:
                st.downloads[p] = tuple(argv)

    def note_script(
        self, argv: list[str], redirects: tuple[RRedirect, ...], body: str | None, st: _State
    ) -> None:
        """Remember the text ``echo``/``printf``/``cat <<EOF`` writes to a file, so a shell that
        runs the file later on this line runs that text (``echo 'rm -rf t' > x.sh; sh x.sh``)."""
        if argv[0] == "cat":
            text = body if tuple(argv) in (("cat",), ("cat", "-")) else None
        else:
            text = _printed(tuple(argv))
        for r in redirects:
            if r.op in (">", ">|") and r.fd in ("", "1") and r.path:
                if text is None or len(text) > _SCRIPT_CHARS:
                    st.scripts.pop(r.path, None)  # what it holds now is not known
                else:
                    st.scripts[r.path] = text

    def run_script(
        self, name: str, argv: list[str], spans: list[Span], st: _State, ctx: _Ctx
    ) -> None:
        """``sh x.sh``, ``bash x.sh``, ``source x.sh``, ``./x.sh`` of a file written earlier on
        this line with known text: that text runs, as a shell string."""
        script = name if "/" in name else next((a for a in argv[1:] if not a.startswith("-")), "")
        p = self.path(script, st.cwd) if script else None
        text = st.scripts.get(p) if p else None
        if text is not None:
            self.shell_string(text, spans[0], st, ctx, "script " + script)

    def run_download(
        self,
        argv: list[str],
        spans: list[Span],
        span: Span,
        st: _State,
        ctx: _Ctx,
        assigns: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """``bash install.sh`` / ``./install.sh`` after downloading it: a shell fed by the fetch
        (and ``LD_PRELOAD=./x.so cmd``: the downloaded library runs inside ``cmd``)."""
        res = self.res
        name = argv[0]
        preload = [v for k, v in assigns if k in ("LD_PRELOAD", "LD_AUDIT")]
        cands: list[str] = [p for v in preload for p in v.replace(":", " ").split()]
        if name in res.shells or name in res.interpreters or name in ("source", "."):
            cands += [a for a in argv[1:] if not a.startswith("-")][:1]
        elif "/" in self.cmds[-1].raw_name:
            cands.append(self.cmds[-1].raw_name)
        else:
            # a bare name runs from PATH: a download put into a directory on it runs too
            home = self.config.home.rstrip("/")
            cands += [f"{d}/{name}" for d in (*_PATH_DIRS, home + "/.local/bin", home + "/bin")]
        for c in cands:
            p = self.path(c, st.cwd)
            fetch = st.downloads.get(p) if p else None
            if fetch is not None:
                self.cmds.append(
                    Cmd(
                        ("bash",),
                        (spans[0],),
                        span,
                        st.cwd,
                        (),
                        (fetch,),
                        None,
                        (*ctx.via, "downloaded"),
                        (),
                        name,
                    )
                )

    def unwrap(
        self,
        name: str,
        w: dict[str, Any],
        argv: list[str],
        spans: list[Span],
        st: _State,
        upstream: tuple[tuple[str, ...], ...] = (),
    ) -> tuple[list[str], list[Span], str] | None:
        """The command a wrapper runs (argv or a shell string), or None when it runs none."""
        with_value = w.get("with_value", ())
        skip = int(w.get("skip_positionals", 0))
        i = 1
        n = len(argv)
        if any(a in w.get("no_exec_flags", ()) for a in argv[1:2]):
            return None
        while i < n:
            a = argv[i]
            if a == "--":
                i += 1
                break
            if a.startswith("-") and len(a) > 1:
                strings = w.get("string_flags", ())
                clustered = not a.startswith("--") and any(
                    len(f) == 2 and a.endswith(f[1]) for f in strings
                )  # ``script -qc CMD``
                if (a in strings or clustered) and i + 1 < n:
                    return argv[i + 1 : i + 2], spans[i + 1 : i + 2], "string"
                if a in with_value:
                    i += 2
                    continue
                if name == "env" and a in ("-S", "--split-string") and i + 1 < n:
                    return argv[i + 1 :], spans[i + 1 :], "string"
                i += 1
                continue
            if name == "env" and "=" in a:
                i += 1
                continue
            if skip:
                skip -= 1
                i += 1
                continue
            break
        if i >= n:
            return None
        mode = w.get("mode", "argv")
        rest, rspans = argv[i:], spans[i:]
        if mode == "xargs":
            words = _xargs_words(upstream)
            token = _xargs_replace_token(argv[1:i])
            if token is not None:  # -I {}: substituted where it appears, nothing appended
                given = " ".join(words)
                return [a.replace(token, given) for a in rest], rspans, "argv"
            return [*rest, *words], [*rspans, *[rspans[-1]] * len(words)], "argv"
        return rest, rspans, mode

    def hidden_exec(
        self,
        name: str,
        argv: list[str],
        spans: list[Span],
        span: Span,
        st: _State,
        ctx: _Ctx,
        deeper: int,
    ) -> None:
        """Programs a command runs from its own options: ``git -c core.pager=...``, ``rg --pre``."""
        c2 = _Ctx(
            (*ctx.via, name),
            ctx.base,
            ctx.fixed,
            deeper,
            (),
            None,
            ctx.calls,
            ctx.positional,
            ctx.in_pipe,
        )
        if name == "git":
            self.git_config_program(argv, spans, st, c2)
        if name == "npm" and argv[1:3] == ["pkg", "set"]:
            # ``npm pkg set scripts.postinstall="curl ... | sh"``: npm runs the script later
            # (install hooks, npm test): it is read as if run now
            for i, a in enumerate(argv[3:], 3):
                key, eq, value = a.partition("=")
                if eq and key.startswith("scripts.") and value:
                    self.shell_string(value, spans[i], st, c2, "npm script " + key[8:])
        for i, a in enumerate(argv[1:], 1):
            if name == "git":
                val = None
                if a == "-c" and i + 1 < len(argv):
                    val, sp = argv[i + 1], spans[i + 1]
                elif a.startswith("-c") and len(a) > 2:
                    val, sp = a[2:], spans[i]
                if val and "=" in val:
                    key, _, prog = val.partition("=")
                    if _GIT_EXEC_KEY.match(key):
                        self.shell_string(_git_program(key, prog), sp, st, c2, "git -c " + key)
            elif name in ("ssh", "scp", "sftp"):
                # ``-o ProxyCommand=CMD`` (and LocalCommand) runs CMD in a shell
                opt = a[2:] if a[:2] == "-o" else ""
                if a == "-o" and i + 1 < len(argv):
                    opt = argv[i + 1]
                key, _, prog = opt.partition("=")
                if key.lower() in ("proxycommand", "localcommand") and prog.strip():
                    at = spans[i + 1] if a == "-o" else spans[i]
                    self.shell_string(prog, at, st, c2, f"{name} -o {key}")
            elif name == "rsync" and (a in ("-e", "--rsh") or a.startswith("--rsh=")):
                # ``rsync -e 'CMD'``: the remote shell it runs
                prog = a.split("=", 1)[1] if "=" in a else ""
                if a in ("-e", "--rsh") and i + 1 < len(argv):
                    prog = argv[i + 1]
                if prog.strip():
                    self.shell_string(prog, spans[i], st, c2, "rsync -e")
            elif a.startswith(("--pre=", "--hostname-bin=")):
                self.emit([a.split("=", 1)[1]], [spans[i]], span, st, c2)
            elif a in ("--pre", "--hostname-bin") and i + 1 < len(argv):
                self.emit([argv[i + 1]], [spans[i + 1]], span, st, c2)

    def program_var(self, key: str, value: str, span: Span, st: _State, ctx: _Ctx) -> None:
        """``GIT_EDITOR='rm -rf tests' git commit``: a variable whose value a program runs as a
        command (editors, pagers, ssh and askpass helpers) is read as if run now."""
        if not value.strip() or DYN in value:
            return
        c2 = _Ctx(
            (*ctx.via, key),
            ctx.base,
            ctx.fixed,
            ctx.depth + 1,
            (),
            None,
            ctx.calls,
            ctx.positional,
            ctx.in_pipe,
        )
        self.shell_string(value, span, st, c2, key)

    def git_config_program(self, argv: list[str], spans: list[Span], st: _State, ctx: _Ctx) -> None:
        """``git config alias.x '!rm -rf tests'`` (or ``core.pager``, ``core.fsmonitor`` ...)
        stores a program that a later git command runs: it is read as if run now."""
        if "config" not in argv:
            return
        i = argv.index("config") + 1
        operands: list[int] = []
        while i < len(argv):
            a = argv[i]
            if a in ("-f", "--file", "--blob", "--type"):
                i += 2
                continue
            if not a.startswith("-"):
                operands.append(i)
            i += 1
        if len(operands) >= 2:
            key, value = argv[operands[0]], argv[operands[1]]
            if _GIT_EXEC_KEY.match(key) and DYN not in key:
                sp = spans[operands[1]]
                self.shell_string(_git_program(key, value), sp, st, ctx, "git config " + key)

    def find(
        self, argv: list[str], spans: list[Span], span: Span, st: _State, ctx: _Ctx, deeper: int
    ) -> None:
        if _FAST_PATHS and _FIND_ACTIONS.isdisjoint(argv):
            return  # nothing runs: no -exec/-execdir/-ok/-okdir/-delete anywhere
        starts: list[str] = []
        i = 1
        while i < len(argv) and not argv[i].startswith(("-", "(", "!")):
            starts.append(argv[i])
            i += 1
        if not starts:
            starts = ["."]
        c2 = _Ctx(
            (*ctx.via, "find"),
            ctx.base,
            ctx.fixed,
            deeper,
            (),
            None,
            ctx.calls,
            ctx.positional,
            ctx.in_pipe,
        )
        names = [argv[k + 1] for k in range(i, len(argv) - 1) if argv[k] in ("-name", "-iname")]
        hit = "**/" + names[0] if len(names) == 1 and "/" not in names[0] else "{}"
        wholes = [argv[k + 1] for k in range(i, len(argv) - 1) if argv[k] in ("-path", "-ipath")]
        start = starts[0].rstrip("/") + "/"
        if len(wholes) == 1 and not names and wholes[0].startswith(("*", start)):
            # ``find / -path '*/.ssh/id_*'``: the whole path matches the pattern
            hit = wholes[0][len(start) :] if wholes[0].startswith(start) else wholes[0]
        j = i
        while j < len(argv):
            a = argv[j]
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                k = j + 1
                while k < len(argv) and argv[k] not in (";", "+"):
                    k += 1
                inner = argv[j + 1 : k]
                if inner:
                    sub = [x.replace("{}", starts[0].rstrip("/") + "/" + hit) for x in inner]
                    self.emit(sub, list(spans[j + 1 : k]), span, st, c2)
                j = k + 1
                continue
            if a == "-delete":
                # find evaluates left to right: only tests before -delete narrow it
                tests = any(x in self.res.find_filters for x in argv[i:j])
                targets = [s if not tests else s.rstrip("/") + "/" + hit for s in starts]
                self.emit(
                    ["rm", "-r", "-f", *targets], [spans[j]] * (len(targets) + 3), span, st, c2
                )
            j += 1

    def shell(
        self,
        argv: list[str],
        spans: list[Span],
        span: Span,
        st: _State,
        ctx: _Ctx,
        deeper: int,
        stdin_body: str | None,
        node: Command | None,
    ) -> None:
        """``sh -c STRING``, ``bash <<EOF``, ``bash <(curl ...)``, ``sh`` reading a pipe."""
        i = 1
        code_i = -1
        has_c = False
        while i < len(argv):
            a = argv[i]
            if a == "--" or a == "-":
                i += 1
                break
            if (a.startswith("-") and len(a) > 1) or a.startswith("+"):
                if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                    i += 2
                    continue
                if not a.startswith("--") and "c" in a[1:]:
                    has_c = True
                i += 1
                continue
            break
        if has_c:
            code_i = i if i < len(argv) else -1
        c2 = _Ctx(
            (*ctx.via, argv[0] + " -c"),
            ctx.base,
            ctx.fixed,
            deeper,
            (),
            None,
            ctx.calls,
            ctx.positional,
            ctx.in_pipe,
        )
        if code_i >= 0:
            exact = (
                node is not None
                and code_i < len(node.words)
                and node.words[code_i].span == spans[code_i]
            )
            self.shell_string(argv[code_i], spans[code_i], st, c2, "sh -c", exact=exact)
            return
        if has_c:
            return
        if i < len(argv):
            # a script file; `bash <(curl ...)` has its program produced by a substitution
            if node is not None and i < len(node.words) and node.words[i].substs:
                return  # producers are already upstream of this Cmd (rules see them)
            return
        if stdin_body is not None:
            c3 = _Ctx(
                (*ctx.via, argv[0] + " <<"),
                ctx.base,
                ctx.fixed,
                deeper,
                (),
                None,
                ctx.calls,
                ctx.positional,
                ctx.in_pipe,
            )
            self.shell_string(stdin_body, span, st, c3, "here-doc")

    def shell_string(
        self, code: str, span: Span, st: _State, ctx: _Ctx, how: str, *, exact: bool = False
    ) -> None:
        if not code.strip():
            return
        # ``span`` comes from ``emit`` and is already in the original text's offsets: mapping
        # it through ``ctx.base`` again would shift it past the end of nested code.
        if DYN in code:
            if code.strip() == DYN:
                self.signal("eval-dynamic", span, _Ctx(), how)
                return
            code = code.replace(DYN, "__DYN__")
        pr = treesitter_fe.parse(code, max_depth=self.config.max_depth)
        outer = span if ctx.fixed is None else ctx.fixed
        if exact and self.src[outer[0] : outer[1]][1:-1] == code and ctx.base < 0:
            c2 = _Ctx(
                ctx.via,
                outer[0] + 1,
                None,
                ctx.depth,
                ctx.upstream,
                None,
                ctx.calls,
                ctx.positional,
                ctx.in_pipe,
            )
        elif exact and self.src[outer[0] : outer[1]] == code and ctx.base < 0:
            c2 = _Ctx(
                ctx.via,
                outer[0],
                None,
                ctx.depth,
                ctx.upstream,
                None,
                ctx.calls,
                ctx.positional,
                ctx.in_pipe,
            )
        else:
            c2 = _Ctx(
                ctx.via,
                -1,
                outer,
                ctx.depth,
                ctx.upstream,
                None,
                ctx.calls,
                ctx.positional,
                ctx.in_pipe,
            )
        if not pr.ok:
            self.signals.append(Signal("nested-parse-error", outer, how))
        if pr.root is not None:
            self.walk(pr.root, st.copy(), c2)

    def interpreter(
        self,
        argv: list[str],
        spans: list[Span],
        span: Span,
        st: _State,
        ctx: _Ctx,
        deeper: int,
        stdin_body: str | None,
    ) -> None:
        """Scan inline code (``python -c``, ``perl -e``, ``node -e``, here-docs) heuristically."""
        code = None
        cspan = span
        at = code_argument(argv, self.res.code_flags)
        if at is not None:
            code, cspan = argv[at], spans[at]
        if code is None:
            if len([a for a in argv[1:] if not a.startswith("-")]) == 0 and stdin_body:
                code = stdin_body
            else:
                return
        self.scan_code(code, cspan, argv[0], st, ctx, deeper)

    def awk_program(
        self, argv: list[str], spans: list[Span], st: _State, ctx: _Ctx, deeper: int
    ) -> None:
        """An awk program is code: ``awk 'BEGIN{system("rm -rf tests")}'`` runs a shell."""
        i = 1
        while i < len(argv):
            a = argv[i]
            if a in ("-F", "-v"):
                i += 2
                continue
            if a == "-f" or a.startswith("-f"):
                return  # the program is in a file
            if a.startswith("-") and a != "-":
                i += 1
                continue
            if "system" in a or "|" in a or "print >" in a:
                self.scan_code(a, spans[i], argv[0], st, ctx, deeper)
            return

    def scan_code(
        self, code: str, cspan: Span, lang: str, st: _State, ctx: _Ctx, deeper: int
    ) -> None:
        """The policy's interpreter patterns over code: the commands it runs, and commands
        standing for what it does to files."""
        code = fold_code(code)
        argv = [lang]
        c2 = _Ctx(
            (*ctx.via, argv[0]),
            -1,
            cspan,  # already outer (from ``emit``)
            deeper,
            (),
            None,
            ctx.calls,
            ctx.positional,
            ctx.in_pipe,
        )
        if lang.startswith(("python", "pypy")) and deeper < self.config.max_depth:
            # Python's exec/eval of a literal runs Python: read it as code too
            for m in _PY_EXEC_LITERAL_RE.finditer(code):
                self.scan_code(m.group(2), cspan, lang, st, ctx, deeper + 1)
        python = lang.startswith(("python", "pypy"))
        for rx, kind, tmpl in self.res.interpreter_patterns:
            for m in rx.finditer(code):
                if kind == "shell":
                    if python and (
                        _PY_EVAL_CALL.match(m.group(0)) or not _PY_CALL.match(m.group(0))
                    ):
                        # Python's exec/eval run Python (read above), and Python calls a
                        # function with parentheses: ``'exec')`` in a string is not a call
                        continue
                    self.shell_string(m.group("s"), cspan, st, c2, argv[0])
                elif kind == "list":
                    items = re.findall(r"""['"]([^'"]*)['"]""", m.group("s"))
                    if items:
                        self.emit(items, [cspan] * len(items), cspan, st, c2)
                else:
                    # a command standing for what the code does (``open(p, 'w')`` as truncate):
                    # via ends in CODE_VIA so a reader can tell it from a command the code runs
                    p = m.group("s")
                    c3 = _Ctx(
                        (*c2.via, CODE_VIA),
                        c2.base,
                        c2.fixed,
                        c2.depth,
                        c2.upstream,
                        c2.stdin_body,
                        c2.calls,
                        c2.positional,
                        c2.in_pipe,
                    )
                    self.emit(
                        [x.replace("{s}", p) for x in tmpl], [cspan] * len(tmpl), cspan, st, c3
                    )
