"""The shape of a fault row (name, heal op, effect, what it takes) and the
words it is made of: a vocabulary, importing nothing, so a system's own rows
(in its own vocabulary) are written in it without importing the checkers,
and the checkers' table (checkers.faults) is built of the core's rows and
theirs (the `faultline.fault_rows` entry points)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# What a fault does while in force.
DOWN = "down"        # its nodes are stopped until its heal
CUT = "cut"          # links between nodes are cut until its heal (op value: `cut` pairs)
VOTERS = "voters"    # voters are removed until its heal
OTHER_CLUSTER = "other-cluster"  # its node is formatted for another cluster until its heal
RESTART = "restart"  # kills its nodes and starts them again; counted down while its op runs
# Its nodes run on a faulty disk, slowed or with a wrong clock, or its links
# lose, delay, duplicate or slow packets (op value: `links`), until its heal.
DEGRADED = "degraded"
ARMED = "armed"      # a trigger: what it sets off is recorded as another fault's op

# What a fault takes away from the cluster, as availability and convergence
# judge it: a correct cluster may stop serving, or change leader, only when
# a fault took away the leader or a quorum of voters (checkers.impairment).
NODES = "nodes"                # its op value's nodes, from its inject until its heal names them
NODES_DURING_OP = "nodes-during-op"  # its nodes, while its own op runs (killed, restarted)
LINKS = "links"                # its op value's `cut` pairs (from, to), until its heal
NOTHING = "nothing"            # itself nothing: what it sets off is recorded as its own op
# Its op value's nodes run starved (of CPU or memory) until its heal names
# them: still up and linked, so a leader among them is not taken, but a
# quorum that needs them may be too slow to hold an election's timers. They
# count against a quorum only: a majority of voters starved is a quorum
# taken; a minority, even the leader's node, takes nothing.
STARVED = "starved"
# A fault without a row (a plug-in's) may take anything: the whole cluster,
# while its op runs and until a heal whose f no known fault uses.
ANYTHING = "anything"

# What one injection did to the data its nodes hold at rest, judged from the
# op's recorded value (`FaultOp.at_rest`): whether a node that recovers less
# than it said was durable may blame the fault (checkers.flushed_lost).
KEEPS = "keeps"          # what was fsynced stays: a kill, a pause, a lost un-fsynced write
# While in force its disk may refuse, fill, slow or garble I/O; what it holds stays.
DISTURBS = "disturbs"
# Fsynced data is gone or changed: bits flipped, a file cut, a data dir put aside.
DESTROYS = "destroys"


def keeps(value: Any) -> str:
    return KEEPS


def destroys(value: Any) -> str:
    return DESTROYS


def may_have(heal_value: Any, node: str) -> bool:
    return True


# What a disk rule counts in its heal's record (nemesis.disk_rules counts
# under these names): reads it failed, failed again on the kernel's retry,
# or returned with a bit flipped.
READ_FAILED, READ_FAILED_AGAIN, READ_FLIPPED = "eio-read", "eio-retried", "flipped"


@dataclass(frozen=True)
class FaultOp:
    name: str
    heal_f: str
    effect: str
    takes: str = ANYTHING
    # Its nodes may come back without the durable state their votes rest on
    # (a cut or lost file of its votes): a correct voter then abstains until
    # it caught up with a leader (KIP-996, "Disk failure"), so it stays out of
    # the quorum after its restart until its own lines show it back
    # (checkers.impairment.timeline).
    loses_state: bool = False
    # What an injection, by its recorded value, did to the data at rest
    # (KEEPS, DISTURBS or DESTROYS): one fault may do either by its variant.
    at_rest: Callable[[Any], str] = keeps
    # For one that DISTURBS: whether, by its heal's recorded value, it failed
    # or garbled a read on `node` (a recovery then may have read less); a
    # fault whose heal says nothing may have.
    spoiled_reads: Callable[[Any, str], bool] = may_have

    @property
    def lasting(self) -> bool:
        """In force from its inject until its heal op, not just while its own op runs."""
        return self.effect in (DOWN, CUT, VOTERS, OTHER_CLUSTER, DEGRADED)
