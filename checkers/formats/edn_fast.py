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
answers what the general reader would (`tests/test_formats_edn.py` compares
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
_STRING = "\x01"   # stands for a string while the rest is rewritten
# Every token (brackets, strings and comments aside) must be one of these; at
# most 18 digits keeps every integer in msgpack's range.
_SYMBOL = r"(?:[A-Za-z*!_?$%&=<>.'/]|[+\-](?![0-9]))[A-Za-z0-9*+!\-_?$%&=<>.:#'/]*"
_TOKENS = re.compile(rf"(?:(?::{_SYMBOL}|-?(?:0|[1-9][0-9]{{0,17}})|nil|true|false) )*+")
# Deletes every ASCII character but brackets; anything else is left, and
# makes _balanced fail (no token of the subset is outside ASCII).
_BRACKETS_ONLY = {i: None for i in range(128) if chr(i) not in "[]{}"}
_MAX_DEPTH = 50
# A map becomes a JSON object whose one member holds its forms in order, and
# the decoder hands each to _map, in C's stride (no walk over every value).
_JSON = {"[": "[", "]": "]", "{": '{"":[', "}": "]}", "nil": "null", _STRING: _STRING}


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
    if not _balanced(code):
        return None
    # Brackets get spaces around them, so that splitting at whitespace and
    # commas (EDN's whitespace) gives the tokens.
    tokens = (code.replace(",", " ").replace("[", " [ ").replace("]", " ] ")
              .replace("{", " { ").replace("}", " } ").replace(_STRING, f" {_STRING} ")
              .split())
    # Thousands of distinct tokens, not millions: each is checked once, the
    # keywords and JSON's words translated once, and the tokens mapped
    # through the table in C (any other token, a number, is itself).
    distinct = set(tokens).difference(_JSON)
    if distinct and _TOKENS.fullmatch(" ".join(distinct) + " ") is None:
        return None
    table = {t: f'"{t[1:]}"' for t in distinct if t[0] == ":"}
    table.update(_JSON)
    code = (",".join(map(table.get, tokens, tokens))
            .replace("[,", "[").replace(",]", "]"))
    if strings:
        pieces = code.split(_STRING)
        code = "".join(p + s for p, s in zip(pieces, strings + [""], strict=True))
    wrapped = bool(tokens) and tokens[0] == "["
    try:
        items = json.loads(code if wrapped else f"[{code}]", strict=False,
                           object_pairs_hook=_map)
    except (ValueError, TypeError):  # TypeError: a vector as a map key
        return None
    return items if all(type(m) is dict for m in items) else None


def _map(pairs: list[tuple[str, list]]) -> dict[Any, Any]:
    ((_, forms),) = pairs
    it = iter(forms)
    m = dict(zip(it, it, strict=True))
    if len(m) * 2 != len(forms):
        raise ValueError("a key twice")
    return m


def _balanced(code: str) -> bool:
    """Every bracket closed by its own kind, nested at most _MAX_DEPTH deep."""
    brackets = code.translate(_BRACKETS_ONLY)
    for _ in range(_MAX_DEPTH):
        if not brackets:
            return True
        inner = brackets.replace("[]", "").replace("{}", "")
        if inner == brackets:
            return False
        brackets = inner
    return False
