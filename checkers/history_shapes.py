"""The typed shapes `checkers.history.read_whole` decodes a msgpack history
into with msgspec: an op's fields, its value and key left as bytes; a
list-append txn's micro-ops, a read's value left as bytes. Each takes only
what msgpack (the streaming reader) decodes the same way; anything else
fails to decode, and that reader declines.

Apart from `checkers.history` so that reading an EDN history never imports
msgspec; without `from __future__ import annotations`, so msgspec sees the
annotations as types.
"""

from typing import Annotated, Literal

import msgspec

# A string field's length past which the whole reader declines: 5 such
# fields at 4 bytes a char in UTF-8 stay far below MAX_OP_BYTES (16 MiB)
# beside a value and a key of a quarter of it each (tests/checkers/
# test_history_whole.py holds the sum).
MAX_CHARS = 256 * 1024
_Str = Annotated[str, msgspec.Meta(max_length=MAX_CHARS)]


class Envelope(msgspec.Struct, forbid_unknown_fields=True):
    """An op's fields as `Op.from_map` reads them; its value and key left
    as bytes. Unknown fields are refused (`Op.from_map` ignores them, but
    the streaming reader's limits apply to them too)."""

    index: int
    time: int
    process: int | _Str
    type: _Str
    f: _Str
    value: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    key: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    node: _Str | None = None
    error: _Str | None = None
    level: _Str | None = None
    workload: _Str | None = None


# A micro-op [f, k, v], tagged by f; one with more or fewer elements is not
# one of these (forbid_unknown_fields: else extra elements would be dropped).
class Append(msgspec.Struct, array_like=True, tag="append", forbid_unknown_fields=True):
    k: int | str
    v: int | str


class Read(msgspec.Struct, array_like=True, tag="r", forbid_unknown_fields=True):
    """A read, its value left as bytes: a list for an ok txn (or nil)."""

    k: int | str
    v: msgspec.Raw


ENVELOPES = msgspec.msgpack.Decoder(list[Envelope])
# an ok list-append txn's micro-ops
MOPS = msgspec.msgpack.Decoder(list[Append | Read])
# micro-ops of scalars alone (an invoke's, one that read nothing): as msgpack
# decodes them, lists, since msgpack decodes ints, strings and nil alike
SCALAR_MOPS = msgspec.msgpack.Decoder(list[list[int | str | None]])


# --- the Elle fast path's shapes (`checkers.elle.fast`) ---------------------
# A list-append history of txns alone, every key and element an int and no
# field but an op's usual ones: anything else fails to decode, and the fast
# path leaves the history to the object path.


class TxnAppend(msgspec.Struct, array_like=True, tag="append", forbid_unknown_fields=True,
                gc=False):
    k: int
    v: int


class TxnRead(msgspec.Struct, array_like=True, tag="r", forbid_unknown_fields=True, gc=False):
    """An ok txn's read, its value left as bytes (a list, or nil)."""

    k: int
    v: msgspec.Raw


class TxnUnread(msgspec.Struct, array_like=True, tag="r", forbid_unknown_fields=True, gc=False):
    """A read in an invoke, or in a failed or indeterminate completion: nil."""

    k: int
    v: None


class _TxnOp(msgspec.Struct, forbid_unknown_fields=True, gc=False, tag_field="type",
             kw_only=True):
    """A txn op's fields, by its type (the tag), and its micro-ops; only an
    ok txn's reads are left as bytes (the fast path compares them with their
    key's longest read, which it decodes). Everything else is decoded, so
    the streaming reader would take it too."""

    index: int
    time: int
    process: int
    f: Literal["txn"]
    node: _Str | None = None
    error: _Str | None = None


class TxnInvoke(_TxnOp, tag="invoke"):
    value: list[TxnAppend | TxnUnread]


class TxnOk(_TxnOp, tag="ok"):
    value: list[TxnAppend | TxnRead]


class TxnFail(_TxnOp, tag="fail"):
    value: list[TxnAppend | TxnUnread]


class TxnInfo(_TxnOp, tag="info"):
    value: list[TxnAppend | TxnUnread]


TXN_OPS = msgspec.msgpack.Decoder(list[TxnInvoke | TxnOk | TxnFail | TxnInfo])
INTS = msgspec.msgpack.Decoder(list[int])


class AnyOp(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """Any op's fields, its value left as bytes: for a history TXN_OPS does
    not take whole (one with nemesis ops), read op by op."""

    index: int
    time: int
    process: int | _Str
    type: Literal["invoke", "ok", "fail", "info"]
    f: _Str
    value: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    node: _Str | None = None
    error: _Str | None = None


ANY_OPS = msgspec.msgpack.Decoder(list[AnyOp])
OK_MOPS = msgspec.msgpack.Decoder(list[TxnAppend | TxnRead])
UNREAD_MOPS = msgspec.msgpack.Decoder(list[TxnAppend | TxnUnread])
