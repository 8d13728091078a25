"""What a workload's ops act on: the data types a history can be about.

Each workload names its type (`DATA` in workloads/<name>.py). A client serves
the types whose ops it can carry out (`DATA` on the client class; the
systems' client tables are derived from it), and a checker reads a history by
its type (durability's rules; the type reaches it in its options). This sits
on the checkers' floor because the checkers, which import nothing above them,
read it too; workload names themselves are defined only in their modules.
"""

from __future__ import annotations

# read / write / cas of one value per key (`key` None: the one register).
REGISTERS = "registers"
# txns of [append k v] and [r k list] micro-ops on per-key lists (Elle's list-append).
LISTS = "lists"
# txns of [w k v] and [r k v] micro-ops on per-key registers (Elle's rw-register).
REGISTER_TXNS = "register-txns"
# append [log value] and read [log from count] on offset-addressed logs.
LOGS = "logs"

ALL = (REGISTERS, LISTS, REGISTER_TXNS, LOGS)


def is_single_key_read(value: object) -> bool:
    """A transaction of exactly one read: what a store may answer through its
    single-key read path (a linearizable get) rather than as a transaction."""
    return (isinstance(value, list) and len(value) == 1 and isinstance(value[0], list)
            and len(value[0]) == 3 and value[0][0] == "r")
