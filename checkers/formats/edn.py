"""A small, strict EDN reader and writer, enough for Jepsen histories.

Why our own: the PyPI EDN packages are either unmaintained or lenient (they
accept trailing garbage, recurse without bound, or hand back exotic types).
Histories come from other people's machines, so the reader here is strict,
bounds nesting depth, and raises only `EdnError` with the character offset.

Supported: nil/true/false, ints (with optional N), finite floats (with
optional M), strings with escapes, characters, keywords, symbols,
vectors, lists, maps, sets, `#_` discard, `;` comments, commas as whitespace,
and tagged elements (`#inst "..."` and `#uuid "..."` give the string, any other
tag, e.g. a record such as `#jepsen.history.Op{...}`, gives the tagged value).
Non-finite numbers (`##Inf`, `##NaN`, and a literal past a float's range such
as `1e400`) are refused: in a history they judge nothing (every infinity
equals every other, so a write of 1e400 and a read of 2e400 would agree).

Keywords and symbols come back as `Keyword` / `Symbol` (str subclasses, equal
to the plain string without the colon), vectors and lists as Python lists,
maps as dicts, sets as frozensets. Map keys and set elements that are
collections are frozen (lists -> tuples) so they can be hashed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

DEFAULT_MAX_DEPTH = 100
_MAX_NUMBER_CHARS = 200


class EdnError(ValueError):
    """Text that is not valid EDN; `offset` is the character offset of the problem."""

    def __init__(self, offset: int, reason: str) -> None:
        self.offset = offset
        self.reason = reason
        super().__init__(f"at character {offset}: {reason}")


class Keyword(str):
    """An EDN keyword; the string value has no leading colon."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Keyword({str.__repr__(self)})"


class Symbol(str):
    """An EDN symbol."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


_WS = re.compile(r"(?:[\s,]+|;[^\n]*)*")
_NUMBER = re.compile(
    r"[+-]?(?:0|[1-9][0-9]*)(?P<frac>\.[0-9]*)?(?P<exp>[eE][+-]?[0-9]+)?(?P<suffix>[NM])?")
_SYMBOL_START = r"[A-Za-z*!_?$%&=<>.'/]|[+\-](?![0-9])"
_SYMBOL = re.compile(rf"(?:{_SYMBOL_START})[A-Za-z0-9*+!\-_?$%&=<>.:#'/]*")
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_STRING_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
_CHAR = re.compile(r"\\(newline|return|space|tab|formfeed|backspace|u[0-9A-Fa-f]{4}|\S)")
_DELIMITERS = frozenset(' \t\n\r\f\v,;()[]{}"')
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "b": "\b", "f": "\f"}
_NAMED_CHARS = {"newline": "\n", "return": "\r", "space": " ", "tab": "\t",
                "formfeed": "\f", "backspace": "\b"}
_CLOSERS = {"[": "]", "(": ")", "{": "}"}
_STRING_TAGS = frozenset({"inst", "uuid"})


def freeze(value: Any) -> Any:
    """A hashable equivalent of a decoded value, for map keys and set elements."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return frozenset((k, freeze(v)) for k, v in value.items())
    return value


class Parser:
    """Reads forms from `text` starting at `pos`."""

    def __init__(self, text: str, pos: int = 0, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.text = text
        self.pos = pos
        self.max_depth = max_depth

    def skip_ws(self) -> int:
        m = _WS.match(self.text, self.pos)
        assert m is not None   # it matches the empty string
        self.pos = m.end()
        return self.pos

    def at_end(self) -> bool:
        return self.skip_ws() >= len(self.text)

    def read(self, depth: int = 0) -> Any:
        """The next form; raises EdnError at end of input.

        The common tokens (brackets, plain strings, numbers, keywords, symbols)
        go through one regex match each and an explicit stack; everything else
        (escapes, characters, sets, tags, discards, errors) through the
        recursive reader below, which is simpler but several times slower.
        """
        text = self.text
        stack: list[tuple[str, list[Any], int]] = []
        value: Any
        while True:
            # finditer walks the tokens in C; _FAST always matches (its last,
            # empty alternative), so it never skips text, and that alternative
            # hands whatever else comes to the recursive reader.
            for m in _FAST.finditer(text, self.pos):
                kind = m.lastindex
                if kind == _KW:
                    value = Keyword(m[kind])
                elif kind == _INT:
                    token = m[kind]
                    value = (int(token) if len(token) <= _MAX_NUMBER_CHARS
                             else self._number_value(token, m.start(kind)))
                elif kind == _OPEN:
                    if depth + len(stack) >= self.max_depth:
                        raise EdnError(m.start(kind),
                                       f"nested deeper than {self.max_depth} levels")
                    stack.append((_CLOSERS[m[kind]], [], m.start(kind)))
                    continue
                elif kind == _CLOSE:
                    c = m[kind]
                    if not stack or stack[-1][0] != c:
                        raise EdnError(m.start(kind), f"unmatched {c!r}")
                    closer, items, start = stack.pop()
                    value = self._map(items, start) if closer == "}" else items
                elif kind == _STR:
                    value = m[kind]
                elif kind == _NUM:
                    value = self._number_value(m[kind], m.start(kind))
                elif kind == _SYM:
                    word = m[kind]
                    value = _WORDS.get(word, _NOT_A_WORD)
                    if value is _NOT_A_WORD:
                        value = Symbol(word)
                else:
                    self.pos = m.start(_OTHER)
                    break
                if not stack:
                    self.pos = m.end()
                    return value
                stack[-1][1].append(value)
            if stack and self.skip_ws() >= len(text):
                raise EdnError(stack[-1][2], f"collection is never closed with "
                                             f"{stack[-1][0]!r}")
            value = self._read_or_discard(depth + len(stack))
            if value is _DISCARDED:
                continue
            if not stack:
                return value
            stack[-1][1].append(value)

    def read_or_discard(self, depth: int = 0) -> Any:
        """Like `read`, but a `#_` form gives back `_DISCARDED` instead of being skipped."""
        pos = self.skip_ws()
        if self.text.startswith("#_", pos):
            return self._read_or_discard(depth)
        return self.read(depth)

    def read_or_discard_slow(self, depth: int = 0) -> Any:
        """The next form by the recursive reader alone (the reference for `read`)."""
        while True:
            value = self._read_or_discard(depth)
            if value is not _DISCARDED:
                return value

    def _read_or_discard(self, depth: int) -> Any:
        if depth > self.max_depth:
            raise EdnError(self.pos, f"nested deeper than {self.max_depth} levels")
        text = self.text
        pos = self.skip_ws()
        if pos >= len(text):
            raise EdnError(pos, "unexpected end of input")
        c = text[pos]
        if c == '"':
            return self._string()
        if c in _CLOSERS:
            self._may_open(depth, pos)
            self.pos = pos + 1
            items = self._items(_CLOSERS[c], pos, depth + 1)
            return self._map(items, pos) if c == "{" else items
        if c in ")]}":
            raise EdnError(pos, f"unmatched {c!r}")
        if c == "#":
            return self._dispatch(depth)
        if c == ":":
            m = _SYMBOL.match(text, pos + 1)
            if m is None or text.startswith(":", pos + 1):
                raise EdnError(pos, "malformed keyword")
            self._end_token(m.end())
            return Keyword(m.group())
        if c == "\\":
            m = _CHAR.match(text, pos)
            if m is None:
                raise EdnError(pos, "malformed character")
            self._end_token(m.end())
            name = m.group(1)
            if name in _NAMED_CHARS:
                return _NAMED_CHARS[name]
            if len(name) == 5 and name[0] == "u":
                return self._code_point(int(name[1:], 16), pos)
            return name  # _CHAR matches no other name longer than one character
        if c.isdigit() or (c in "+-" and pos + 1 < len(text) and text[pos + 1].isdigit()):
            return self._number()
        m = _SYMBOL.match(text, pos)
        if m is None:
            raise EdnError(pos, f"unexpected character {c!r}")
        self._end_token(m.end())
        word = m.group()
        if word == "nil":
            return None
        if word == "true":
            return True
        if word == "false":
            return False
        return Symbol(word)

    def _may_open(self, depth: int, pos: int) -> None:
        # The same rule as the fast path's: a collection may open at depths
        # 0..max_depth-1, whether or not it holds anything (checking only its
        # items let an empty one through one level deeper).
        if depth >= self.max_depth:
            raise EdnError(pos, f"nested deeper than {self.max_depth} levels")

    def _end_token(self, end: int) -> None:
        if end < len(self.text) and not (self.text[end] in _DELIMITERS
                                         or self.text[end].isspace()):
            raise EdnError(end, f"unexpected character {self.text[end]!r} after a token")
        self.pos = end

    def _items(self, closer: str, start: int, depth: int) -> list[Any]:
        items: list[Any] = []
        text = self.text
        while True:
            pos = self.skip_ws()
            if pos >= len(text):
                raise EdnError(start, f"collection is never closed with {closer!r}")
            if text[pos] == closer:
                self.pos = pos + 1
                return items
            value = self._read_or_discard(depth)
            if value is not _DISCARDED:
                items.append(value)

    def _map(self, items: list[Any], start: int) -> dict[Any, Any]:
        if len(items) % 2:
            raise EdnError(start, "map has an odd number of forms")
        out: dict[Any, Any] = {}
        for i in range(0, len(items), 2):
            key = freeze(items[i])
            if key in out:
                raise EdnError(start, f"map has the key {key!r:.40} twice")
            out[key] = items[i + 1]
        return out

    def _dispatch(self, depth: int) -> Any:
        text, pos = self.text, self.pos
        nxt = text[pos + 1] if pos + 1 < len(text) else ""
        if nxt == "{":
            self._may_open(depth, pos)
            self.pos = pos + 2
            out: set[Any] = set()
            for item in self._items("}", pos, depth + 1):
                item = freeze(item)
                if item in out:
                    raise EdnError(pos, f"set has the element {item!r:.40} twice")
                out.add(item)
            return frozenset(out)
        if nxt == "_":
            self.pos = pos + 2
            self.read(depth + 1)
            return _DISCARDED
        if nxt == "#":
            m = _SYMBOL.match(text, pos + 2)
            name = m.group() if m else ""
            if name in _SYMBOLIC_VALUES:
                raise EdnError(pos, f"##{name} is not a finite number")
            raise EdnError(pos, f"unknown symbolic value ##{name:.40}")
        m = _SYMBOL.match(text, pos + 1)
        if m is None or not nxt.isalpha():
            raise EdnError(pos, "malformed dispatch: # must be followed by {, _, # or a tag")
        self.pos = m.end()
        tag = m.group()
        value = self.read(depth + 1)
        if tag in _STRING_TAGS and not isinstance(value, str):
            raise EdnError(pos, f"#{tag} must tag a string")
        return value

    def _string(self) -> str:
        start = self.pos
        m = _STRING_BODY.match(self.text, start + 1)
        assert m is not None   # it matches the empty string
        end = m.end()
        if end >= len(self.text):
            raise EdnError(start, "string is never closed")
        body = m.group()
        self.pos = end + 1
        if "\\" not in body:
            return body
        return _STRING_ESCAPE.sub(lambda e: self._escape(e, start), body)

    def _escape(self, m: re.Match[str], start: int) -> str:
        code = m.group(1)
        if code in _ESCAPES:
            return _ESCAPES[code]
        if len(code) == 5 and code[0] == "u":
            return self._code_point(int(code[1:], 16), start)
        raise EdnError(start + 1 + m.start(), f"unknown string escape \\{code}")

    @staticmethod
    def _code_point(n: int, pos: int) -> str:
        # A lone surrogate is not text: it would fail later, when written out.
        if 0xD800 <= n <= 0xDFFF:
            raise EdnError(pos, f"\\u{n:04x} is a surrogate, not a character")
        return chr(n)

    def _number(self) -> int | float:
        pos = self.pos
        m = _NUMBER.match(self.text, pos)
        if m is None:
            raise EdnError(pos, "malformed number")
        self._end_token(m.end())
        return self._number_value(m.group(), pos)

    @staticmethod
    def _number_value(token: str, pos: int) -> int | float:
        if len(token) > _MAX_NUMBER_CHARS:
            raise EdnError(pos, f"number longer than {_MAX_NUMBER_CHARS} characters")
        suffix = token[-1] if token[-1] in "NM" else ""
        digits = token[:-1] if suffix else token
        if suffix == "M" or "." in digits or "e" in digits or "E" in digits:
            value = float(digits)
            if not math.isfinite(value):
                raise EdnError(pos, f"number {token:.40} is past a float's range")
            return value
        return int(digits)


_SYMBOLIC_VALUES = ("Inf", "-Inf", "NaN")
_DISCARDED = object()
_NOT_A_WORD = object()
_WORDS: dict[str, Any] = {"nil": None, "true": True, "false": False}
_END = r"""(?=[\s,;()\[\]{}"]|\Z)"""
_FAST = re.compile(
    r"(?>(?:[\s,]++|;[^\n]*+)*)(?:"
    r"([\[({])|([\])}])|"
    r'"([^"\\]*)"|'
    rf"([+-]?(?:0|[1-9][0-9]*)){_END}|"
    rf"([+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?[NM]?){_END}|"
    rf":({_SYMBOL.pattern}){_END}|"
    rf"({_SYMBOL.pattern}){_END}|"
    r"())")
# _FAST's groups, in order (no other group in it captures)
_OPEN, _CLOSE, _STR, _INT, _NUM, _KW, _SYM, _OTHER = range(1, 9)


def loads(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Exactly one form from `text` (surrounding whitespace and comments allowed)."""
    p = Parser(text, 0, max_depth)
    value = p.read()
    if not p.at_end():
        raise EdnError(p.pos, "more than one form")
    return value


def iter_forms(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Iterator[tuple[int, Any]]:
    """(offset, form) for each top-level form in `text`."""
    p = Parser(text, 0, max_depth)
    while not p.at_end():
        start = p.pos
        value = p.read_or_discard(0)
        if value is not _DISCARDED:
            yield start, value


def iter_collection(text: str, max_depth: int = DEFAULT_MAX_DEPTH
                    ) -> Iterator[tuple[int, Any]]:
    """(offset, item) for each item of the one vector or list that makes up `text`.

    Items are yielded as they are parsed, so a huge history is not held twice.
    """
    p = Parser(text, 0, max_depth)
    start = p.skip_ws()
    if start >= len(text) or text[start] not in "[(":
        raise EdnError(start, "expected a vector or list")
    closer = _CLOSERS[text[start]]
    p.pos = start + 1
    while True:
        pos = p.skip_ws()
        if pos >= len(text):
            raise EdnError(start, f"collection is never closed with {closer!r}")
        if text[pos] == closer:
            p.pos = pos + 1
            break
        value = p.read_or_discard(1)
        if value is not _DISCARDED:
            yield pos, value
    if not p.at_end():
        raise EdnError(p.pos, "more than one form")


# --- writing ---------------------------------------------------------------

_PLAIN_KEYWORD = re.compile(rf"(?:{_SYMBOL_START})[A-Za-z0-9*+!\-_?$%&=<>.#'/]*")
_STRING_ESCAPES_OUT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r",
                       "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f]')


def _escape_out(m: re.Match[str]) -> str:
    c = m.group()
    return _STRING_ESCAPES_OUT.get(c) or f"\\u{ord(c):04x}"


def keyword_or_string(name: str) -> str:
    """`:name` if `name` is a valid keyword, else the quoted string."""
    if _PLAIN_KEYWORD.fullmatch(name) and name not in ("nil", "true", "false"):
        return ":" + name
    return dumps(name)


def dumps(value: Any) -> str:
    """EDN text for a value built from None, bool, int, float, str, lists, dicts, sets."""
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Keyword):
        return ":" + value
    if isinstance(value, Symbol):
        return str(value)
    if isinstance(value, str):
        return '"' + _NEEDS_ESCAPE.sub(_escape_out, value) + '"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "##NaN"
        if math.isinf(value):
            return "##Inf" if value > 0 else "##-Inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(k)} {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (set, frozenset)):
        return "#{" + " ".join(dumps(v) for v in value) + "}"
    raise ValueError(f"cannot write a {type(value).__name__} as EDN")
