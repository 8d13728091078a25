"""A fast path for the EDN of Jepsen and Elle histories: text made only of
maps at the top level holding vectors, maps, keywords, strings, integers of
up to 18 digits, nil, true and false (what those tools write) is rewritten as
JSON with a few whole-text regex and string operations, and decoded by the
json module in C. Per token Python work is what makes the general reader
(`checkers.formats.edn`) slow; here there is none.

Anything else (floats, characters, sets, tags, lists, symbols, non-ASCII
text outside strings, brackets unbalanced or nested over 50 deep, a map with
an odd number of forms, a key twice or a vector as a key) gives None, and the
caller reads the text with the general reader, which also words the errors.
So this path never decides that text is malformed, and where it answers, it
answers what the general reader would (`tests/checkers/test_formats_edn.py` compares
the two on generated texts).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Strings and comments, split out first so that nothing below rewrites text
# inside them. The escapes EDN allows are JSON's, but for a lone surrogate,
# which EDN refuses; a string with any other escape does not match here, so
# its quote stays in the code and fails _TOKENS.
_STRING_RE = r'("(?:[^"\\]|\\[trn\\"bf]|\\u(?![dD][89a-fA-F])[0-9A-Fa-f]{4})*+")'
_STRINGS_AND_COMMENTS = re.compile(_STRING_RE + r"|;[^\n]*")
# Without the comment alternative the regex engine scans for the quote alone,
# ~25x faster: for text with no ';' anywhere.
_STRINGS = re.compile(_STRING_RE)
# Every token, brackets and strings aside, must be one of these; at most 18
# digits keeps every integer in msgpack's range. A token is whatever lies
# between EDN's whitespace, which in the histories Jepsen and Elle write
# leaves brackets attached to what they open or close (`[[:append`, `nil]]`):
# tokens are split at brackets too only if some bracket sits anywhere else.
_SYMBOL = r"(?:[A-Za-z*!_?$%&=<>.'/]|[+\-](?![0-9]))[A-Za-z0-9*+!\-_?$%&=<>.:#'/]*"
_STRING = "\x01"   # stands for a string while the rest is rewritten
_CORE = rf"(?::{_SYMBOL}|-?(?:0|[1-9][0-9]{{0,17}})|nil|true|false|{_STRING})"
_TOKENS = re.compile(rf"(?:[\[{{]*+{_CORE}?[\]}}]*+ )*+")
# What JSON spells otherwise: keywords (as strings) and nil.
_WORDS = re.compile(rf":{_SYMBOL}|nil")
# Deletes every ASCII character but brackets; anything else is left, and
# makes _balanced fail (no token of the subset is outside ASCII).
_BRACKETS_ONLY = {i: None for i in range(128) if chr(i) not in "[]{}"}
_MAX_DEPTH = 50
# A map becomes a JSON object whose one member holds its forms in order, and
# the decoder hands each to _map, in C's stride (no walk over every value).
_MAP_OPEN, _MAP_CLOSE = '{"":[', "]}"


# Code is rewritten this many characters at a time (cut at a line's end):
# each pass over a piece then stays in the CPU's caches, and the memory of a
# piece's tokens is reused by the next instead of the process growing by the
# whole file's (~25 bytes a character): 0.22 s -> 0.16 s on Elle's huge-scc.
_PIECE = 100_000


def op_maps(text: str) -> list[dict[str, Any]] | None:
    """The top-level maps of `text` (one vector of maps, or maps one after
    another) as dicts, or None if the text is outside the simple subset this
    path reads."""
    if _STRING in text:
        return None
    parts = _STRINGS.split(text)
    # A ';' inside strings only (a shell command in a nemesis op's value) is
    # no comment: only one outside them needs the slower split.
    if ";" in text and any(";" in p for p in parts[::2]):
        parts = _STRINGS_AND_COMMENTS.split(text)
    # split() alternates code, group, code...; the group is None for a comment
    strings = [s for s in parts[1::2] if s is not None]
    code = "".join(p + (" " if s is None else _STRING)
                   for p, s in zip(parts[::2], parts[1::2] + [None], strict=True))
    body = code.replace(",", " ").strip()
    depth = _MAX_DEPTH
    if body.startswith("["):  # one vector: its elements are the top-level forms
        if not body.endswith("]"):
            return None
        body = body[1:-1]
        depth -= 1
    items: list[Any] = []
    used = 0  # strings consumed by the pieces before
    start = 0
    while start < len(body):
        end = body.find("\n", start + _PIECE)
        if end < 0:
            end = len(body)
        n = body.count(_STRING, start, end)
        forms = _forms(body[start:end], strings[used:used + n], depth)
        if forms is None and end < len(body):
            # A form across the cut (a map written over several lines) or text
            # outside the subset: the rest in one piece says which.
            end = len(body)
            n = body.count(_STRING, start, end)
            forms = _forms(body[start:end], strings[used:used + n], depth)
        if forms is None:
            return None
        items += forms
        used += n
        start = end
    return items if all(type(m) is dict for m in items) else None


def _forms(code: str, strings: list[str], depth: int) -> list[Any] | None:
    """The forms of `code` (EDN without strings or commas; `strings` are its
    placeholders' strings, in order), or None if outside the subset or not
    balanced within `depth`."""
    if not _balanced(code, depth):
        return None
    tokens = code.split()
    # Thousands of distinct tokens, not hundreds of thousands: each is checked
    # and translated once, and the tokens mapped through the table in C.
    distinct = list(set(tokens))
    words = " ".join(distinct) + " "
    if _TOKENS.fullmatch(words) is None:
        tokens = (code.replace("[", " [ ").replace("]", " ] ").replace("{", " { ")
                  .replace("}", " } ").replace(_STRING, f" {_STRING} ").split())
        distinct = list(set(tokens))
        words = " ".join(distinct) + " "
        if _TOKENS.fullmatch(words) is None:
            return None
    # (translated at once, as one text: brackets are never inside a word)
    words = _WORDS.sub(_word, words).replace("{", _MAP_OPEN).replace("}", _MAP_CLOSE)
    table = dict(zip(distinct, words.split(" "), strict=False))
    code = ",".join(map(table.__getitem__, tokens))
    # A token that ends in an opening bracket or starts with a closing one
    # left a comma JSON refuses beside it.
    if "[ " in words or " ]" in words or words.startswith("]"):
        code = code.replace("[,", "[").replace(",]", "]")
    if strings:
        pieces = code.split(_STRING)
        code = "".join(p + s for p, s in zip(pieces, strings + [""], strict=True))
    try:
        return json.loads(f"[{code}]", strict=False, object_pairs_hook=_map,
                          parse_constant=_not_edn)
    except (ValueError, TypeError):  # TypeError: a vector as a map key
        return None


def _not_edn(name: str) -> Any:
    # JSON's NaN and Infinity are no EDN: never in the rewritten text (the
    # token check above lets no such word through), refused should one be.
    raise ValueError(name)


def _word(m: re.Match[str]) -> str:
    w = m.group()
    return "null" if w == "nil" else f'"{w[1:]}"'


def _map(pairs: list[tuple[str, list]]) -> dict[Any, Any]:
    ((_, forms),) = pairs
    it = iter(forms)
    m = dict(zip(it, it, strict=False))
    if len(m) * 2 != len(forms):  # an odd number of forms, or a key twice
        raise ValueError("a key twice")
    return m


def _balanced(code: str, depth: int = _MAX_DEPTH) -> bool:
    """Every bracket closed by its own kind, nested at most `depth` deep."""
    brackets = code.translate(_BRACKETS_ONLY)
    for _ in range(depth):
        if not brackets:
            return True
        inner = brackets.replace("[]", "").replace("{}", "")
        if inner == brackets:
            return False
        brackets = inner
    return False
