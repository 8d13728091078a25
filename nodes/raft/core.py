"""The I/O-free raft core: KIP-595 quorum with KIP-996 Pre-Vote and Check Quorum,
KIP-279 truncation and the Redpanda flushed-offset commit rule.

Messages and ticks go in; a ``Ready`` batch (state to persist, log writes,
messages, newly committed entries, events) comes out. The core never touches a
disk or a socket, so every protocol scenario is a deterministic unit test. See
docs/raft-core-api.md for the contract with the server.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from nodes.raft import acks, bugs
from nodes.raft import epoch_cache as ec
from nodes.raft import messages as m
from nodes.raft import voters as vs
from nodes.raft.events import (
    FLUSHED,
    HW,
    PRE_VOTE,
    ROLE,
    TRUNCATE,
    VOTE,
    VOTER_CHANGE,
    VOTERS,
    VOTES_AGAIN,
)
from nodes.raft.messages import Entry, QuorumState
from nodes.raft.requests import LEADER_ACK, QUORUM
from nodes.raft.roles import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    check_transition,
)

__all__ = [
    "Config",
    "Core",
    "Entry",
    "MalformedMessage",
    "NotLeader",
    "QuorumState",
    "Ready",
    "VoterChangeRefused",
]


@dataclass
class Config:
    node_id: str
    voters: tuple[str, ...]
    cluster_id: str
    election_timeout_ticks: int = 10
    fetch_timeout_ticks: int = 15
    fetch_interval_ticks: int = 1
    max_fetch_entries: int = 1000
    pre_vote: bool = True
    check_quorum: bool = True
    bugs: frozenset[str] = frozenset()
    # KIP-853 auto-join: an observer asks the leader to make it a voter once
    # it has caught up, and again every join_retry_ticks until it is one.
    auto_join: bool = False
    join_retry_ticks: int = 10
    # Seconds per tick: only the wall-clock-lease switch turns ticks into
    # wall-clock seconds (its lease is an election timeout long).
    tick_s: float = 0.05


class NotLeader(Exception):
    def __init__(self, leader: str | None) -> None:
        super().__init__(f"not the leader (leader hint: {leader})")
        self.leader = leader


class MalformedMessage(ValueError):
    pass


class VoterChangeRefused(Exception):
    """The leader will not start this voter change now (KIP-853 error codes in messages)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Ready:
    quorum_state: QuorumState | None = None
    truncate_to: int | None = None
    append: list[Entry] = field(default_factory=list)
    epoch_cache: list[tuple[int, int]] | None = None
    messages: list[dict] = field(default_factory=list)
    committed: list[Entry] = field(default_factory=list)
    high_watermark: int | None = None
    events: list[dict] = field(default_factory=list)
    # (offset, level): this node's proposals that may be acknowledged now, at
    # that consistency level (acks.py); `none` before the append is written,
    # `leader` once it is, `quorum` with the commit.
    acked: list[tuple[int, str]] = field(default_factory=list)

    def is_empty(self) -> bool:
        return (
            self.quorum_state is None
            and self.truncate_to is None
            and not self.append
            and self.epoch_cache is None
            and not self.messages
            and not self.committed
            and self.high_watermark is None
            and not self.events
            and not self.acked
        )


@dataclass
class _ReplicaProgress:
    """The leader's view of one voter in the current epoch."""

    last_fetch_tick: int
    # wall-clock-lease switch: the follower's wall clock when it sent its
    # latest fetch, plus the lease; it promises not to follow anyone else before.
    lease_until: float = float("-inf")
    # The voter's log equals ours on [0, match_end) ...
    match_end: int = 0
    # ... and is durable there up to flushed_end: only this counts toward commit.
    flushed_end: int = 0
    # Fetched or acknowledged BeginQuorumEpoch: no need to re-announce.
    acknowledged: bool = False
    # The high watermark our last fetch response to it carried: a fetch at our
    # log end is only worth holding while it would learn nothing new.
    hw_sent: int = 0


@dataclass(frozen=True)
class _HeldFetch:
    """A fetch at the leader's log end, held until there is news (KIP-595 long-poll)."""

    fetch_offset: int
    last_fetched_epoch: int
    since_tick: int


class Core:
    def __init__(
        self, config: Config, state: QuorumState | None, log: list[Entry], seed: int,
        state_lost: bool = False,
    ) -> None:
        """`state_lost`: the node has data but its quorum-state file is gone
        (or unreadable): `state` is None, and the votes it gave are unknown."""
        if state is not None and state.cluster_id != config.cluster_id:
            raise ValueError(
                f"quorum state belongs to cluster {state.cluster_id!r}, not {config.cluster_id!r}"
            )
        for i, entry in enumerate(log):
            if entry.offset != i:
                raise ValueError(f"recovered log is not contiguous from 0 at index {i}")
        self._bugs = bugs.validate(config.bugs)
        self._cfg = config
        self._rng = random.Random(seed)
        self._now = 0
        # KIP-853: config.voters are the bootstrap voters; VotersRecords in
        # the log supersede them from the moment they are appended.
        self._voter_sets = vs.VoterSets(config.voters)
        for entry in log:
            self._voter_sets.note(entry.offset, entry.payload)
        self._voters_committed_reported = -1
        # Leader: AddRaftVoter requests answered when their record commits.
        self._voter_acks: dict[int, str] = {}
        # Proposals of this node waiting for their consistency level's condition.
        self._acks = acks.AckTracker()
        # Observer auto-join: at most one AddRaftVoter in flight (KIP-1186),
        # and no more once this process has been a voter (KAFKA-19850).
        self._join_in_flight = False
        self._was_voter = False
        self._join_sent_tick = 0
        self._next_join_tick = 0
        self._caught_up = False

        self._log: list[Entry] = list(log)
        self._cache = ec.build((e.offset, e.epoch) for e in self._log)
        self._hw = 0
        self._committed_reported = 0
        # Everything recovered from disk was durable by definition.
        self._flushed_end = len(self._log)

        self._epoch = state.epoch if state else 0
        self._leader = state.leader if state else None
        self._voted_for = state.voted_for if state else None
        self._persisted = state
        # KIP-996 ("Disk failure"; KIP-853 would use storage ids): a voter
        # whose quorum-state file is gone no longer knows whom it voted for in
        # which epoch, so it neither votes nor canvasses until it has caught
        # up with a leader, as an observer would.
        self._abstain = bool(state and state.abstain) or (
            state_lost and bugs.VOTE_AFTER_STATE_LOSS not in self._bugs)
        # else BUG when switched on: it comes back as a fresh voter in epoch 0
        # and may vote again in an epoch it already voted in.

        # Output not yet handed out by ready().
        self._disk_end = len(self._log)
        self._pending_state: QuorumState | None = None
        self._pending_truncate: int | None = None
        self._pending_append: list[Entry] = []
        self._cache_changed = False
        self._outbox: list[dict] = []
        self._hw_changed = False
        self._events: list[dict] = []

        # Role-specific state.
        self._election_deadline = 0
        self._fetch_deadline = 0
        self._next_fetch_tick = 0
        self._fetched_from_leader = False
        self._fetch_in_flight = False
        self._fetch_sent_tick = 0
        self._granted: set[str] = set()
        self._rejected: set[str] = set()
        self._replicas: dict[str, _ReplicaProgress] = {}
        self._held_fetches: dict[str, _HeldFetch] = {}
        self._leader_since = 0
        self._next_announce_tick = 0
        # The wall clock as the server last read it (wall-clock-lease switch
        # only; None: never given, and the core keeps to its ticks).
        self._wall: float | None = None

        # A restarted leader cannot resume: it might have lost unflushed
        # entries it already replicated, so it resigns the epoch it led.
        if self._leader == config.node_id:
            self._role = RESIGNED
            self._reset_election_timer()
        elif self._leader is not None:
            self._role = FOLLOWER
            self._start_following()
        else:
            self._role = UNATTACHED
            self._reset_election_timer()
        # A fresh node writes its quorum-state file (epoch 0) right away.
        self._persist()
        self._emit_role()

    # ------------------------------------------------------------------ reads

    @property
    def node_id(self) -> str:
        return self._cfg.node_id

    @property
    def role(self) -> str:
        return self._role

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def leader(self) -> str | None:
        return self._leader

    @property
    def voted_for(self) -> str | None:
        return self._voted_for

    @property
    def voters(self) -> tuple[str, ...]:
        """The voter set in force: the newest VotersRecord in the log (KIP-853)."""
        return self._voter_sets.in_force()

    @property
    def committed_voters(self) -> tuple[str, ...]:
        return self._voter_sets.at(self._hw)

    @property
    def is_voter(self) -> bool:
        return self.node_id in self._voter_sets.in_force()

    @property
    def _majority(self) -> int:
        return vs.majority(self._voter_sets.in_force())

    @property
    def high_watermark(self) -> int:
        return self._hw

    @property
    def log_end(self) -> int:
        return len(self._log)

    @property
    def flushed_end(self) -> int:
        return self._flushed_end

    @property
    def last_epoch(self) -> int:
        return ec.last_epoch(self._cache)

    @property
    def epoch_cache(self) -> list[tuple[int, int]]:
        return list(self._cache)

    @property
    def now(self) -> int:
        return self._now

    def entry_at(self, offset: int) -> Entry | None:
        if 0 <= offset < len(self._log):
            return self._log[offset]
        return None

    def entries(self) -> list[Entry]:
        return list(self._log)

    # ----------------------------------------------------------------- inputs

    def observe_wall_clock(self, now_s: float) -> None:
        """The server's wall clock reading (time.time()), given before a tick, a
        peer message or a read. Only the wall-clock-lease switch looks at it:
        the correct core counts ticks and never reads a clock."""
        if bugs.WALL_CLOCK_LEASE in self._bugs:
            self._wall = now_s

    def lease_read_ok(self) -> bool:
        """wall-clock-lease switch: may this leader answer a read from its own
        state now, without a barrier? It leads, has committed an entry of its
        epoch (so everything committed before is below its high watermark),
        and its wall clock has not passed what a majority's fetches promised.
        Always False in the correct build."""
        if self._wall is None or self._role != LEADER or self._hw == 0:
            return False
        return self._log[self._hw - 1].epoch == self._epoch and self._wall < self._lease_until()

    def _lease_until(self) -> float:
        """The majority-th latest promise (our own counts as forever)."""
        promises = sorted([float("inf")] * self._own_count()
                          + [p.lease_until for p in self._voter_progress()], reverse=True)
        return promises[self._majority - 1]

    def tick(self) -> None:
        self._now += 1
        role = self._role
        if self.is_voter and (self._caught_up or role == LEADER):
            self._was_voter = True
        if role == LEADER:
            self._leader_tick()
        elif role == FOLLOWER:
            if self._now >= self._fetch_deadline:
                self._become_prospective()
            elif self._now >= self._next_fetch_tick and self._may_fetch_again():
                self._send_fetch()
            self._auto_join_tick()
        elif self._now >= self._election_deadline:
            if role == UNATTACHED:
                self._become_prospective()
            elif role == PROSPECTIVE:
                self._lose_pre_vote()
            elif role == CANDIDATE:
                self._become_prospective()
            elif role == RESIGNED:
                if bugs.RESIGNED_SAME_EPOCH in self._bugs:
                    # BUG (KIP-996 before its fix): canvass in the epoch it led,
                    # still naming itself leader; a lost pre-vote then sends it
                    # back to "the known leader": itself.
                    self._transition(UNATTACHED, self._epoch, self._leader)
                else:
                    # KIP-996: a resigned leader must leave its epoch, else it could
                    # fail an election and try to follow itself in that epoch.
                    self._become_unattached(self._epoch + 1)
                self._become_prospective()

    def propose(self, payload: bytes, level: str = QUORUM, blind_write: bool = False) -> int:
        """Leader: append a client command; its offset. `level` is the
        consistency level asked for (validated by requests.consistency_of);
        `Ready.acked` names the offset once that level allows an answer."""
        if self._role != LEADER:
            hint = self._leader if self._leader != self.node_id else None
            raise NotLeader(hint)
        offset = len(self._log)
        self._append([Entry(offset, self._epoch, bytes(payload))])
        self._acks.proposed(offset, acks.effective_level(level, blind_write, self._bugs))
        # A one-voter quorum commits on its own flush; nothing else to wait for.
        return offset

    def resign(self) -> None:
        """Graceful shutdown of a leader: hand the epoch over (EndQuorumEpoch) now
        rather than letting followers wait out their fetch timeout. No-op otherwise."""
        if self._role == LEADER:
            self._resign()

    def flushed(self, end_offset: int) -> None:
        # The disk may still hold entries we already truncated (the truncation
        # is in a Ready not yet handed out); those must not count as ours.
        end = min(end_offset, len(self._log), self._disk_end)
        if self._pending_truncate is not None:
            end = min(end, self._pending_truncate)
        if end > self._flushed_end:
            self._flushed_end = end
            self._events.append({"event": FLUSHED.name, "end": end})
            self._maybe_advance_hw()
            if self._role == FOLLOWER:
                # The leader commits on flushed offsets, and it only learns ours
                # from a fetch: tell it now rather than at the next fetch.
                self._send_fetch()

    def receive(self, msg: dict) -> None:
        try:
            kind = msg["type"]
            if msg["to"] != self.node_id:
                return
            # BUG when switched on (KIP-595: a request whose ClusterId is not
            # ours is refused with INCONSISTENT_CLUSTER_ID): a node formatted
            # for another cluster votes, fetches and counts toward our commits.
            if (msg["cluster_id"] != self._cfg.cluster_id
                    and bugs.CLUSTER_ID_IGNORED not in self._bugs):
                self._reject_foreign(msg)
                return
            handler = self._handlers().get(kind)
            if handler is None:
                raise MalformedMessage(f"unknown message type {kind!r}")
            handler(msg)
        except (KeyError, TypeError) as exc:
            raise MalformedMessage(f"malformed {msg.get('type')!r} message: {exc!r}") from exc

    def ready(self) -> Ready:
        # Once per batch of input, so a burst of proposals goes out in one response.
        self._answer_held_fetches(expired_only=False)
        self._acks.appended(e.offset for e in self._pending_append)
        self._acks.committed(self._hw)
        ready = Ready(
            quorum_state=self._pending_state,
            truncate_to=self._pending_truncate,
            append=self._pending_append,
            epoch_cache=list(self._cache) if self._cache_changed else None,
            messages=self._outbox,
            committed=self._log[self._committed_reported : self._hw],
            high_watermark=self._hw if self._hw_changed else None,
            events=self._events,
            acked=self._acks.take(),
        )
        self._pending_state = None
        self._pending_truncate = None
        self._pending_append = []
        self._cache_changed = False
        self._outbox = []
        self._hw_changed = False
        self._events = []
        self._committed_reported = self._hw
        self._disk_end = len(self._log)
        return ready

    # ------------------------------------------------------- message handlers

    def _handlers(self) -> dict:
        return {
            m.VOTE_REQUEST: self._on_vote_request,
            m.VOTE_RESPONSE: self._on_vote_response,
            m.BEGIN_QUORUM_EPOCH: self._on_begin_quorum_epoch,
            m.BEGIN_QUORUM_EPOCH_RESPONSE: self._on_begin_quorum_epoch_response,
            m.END_QUORUM_EPOCH: self._on_end_quorum_epoch,
            m.FETCH: self._on_fetch,
            m.FETCH_RESPONSE: self._on_fetch_response,
            m.ERROR: self._on_error,
            m.ADD_RAFT_VOTER: self._on_add_raft_voter,
            m.ADD_RAFT_VOTER_RESPONSE: self._on_add_raft_voter_response,
        }

    def _reject_foreign(self, msg: dict) -> None:
        # Answer requests so the sender learns why; never answer a response,
        # or two misconfigured clusters would bounce errors forever.
        if msg["type"] in m.REQUEST_TYPES:
            self._send(
                m.ERROR,
                msg["from"],
                error=m.CLUSTER_ID_MISMATCH,
                in_reply_to=msg["type"],
            )

    def _on_error(self, msg: dict) -> None:
        # A cluster-id mismatch is an operator's problem (the server logs it);
        # FENCED_EPOCH tells us of a newer epoch, like any message would.
        if msg.get("error") == m.FENCED_EPOCH and int(msg["epoch"]) > self._epoch:
            self._observe_epoch(int(msg["epoch"]), None)

    def _on_vote_request(self, msg: dict) -> None:
        candidate = msg["from"]
        epoch = int(msg["epoch"])
        pre_vote = bool(msg["pre_vote"])
        if epoch > self._epoch:
            self._observe_epoch(epoch, None)
        granted = False
        # KIP-853: a candidate outside our voter set is not refused for that:
        # our log may lack the VotersRecord that made it a voter, and refusing
        # could leave its voter set without a leader. It counts only the votes
        # of its own voters, so granting is safe.
        if candidate != self.node_id and epoch == self._epoch:
            log_ok = (int(msg["last_epoch"]), int(msg["log_end"])) >= (
                self.last_epoch,
                len(self._log),
            )
            if pre_vote:
                granted = log_ok and self._grants_pre_vote()
                if granted:
                    # The pre-vote invariant judges who granted it, and while following whom.
                    self._events.append({"event": PRE_VOTE.name, "epoch": epoch,
                                         "candidate": candidate, "role": self._role,
                                         "leader": self._leader, **self._logs_compared(msg)})
            elif self._voted_for == candidate:
                granted = True  # a retried request for the vote we already gave
            else:
                granted = log_ok and self._may_vote()
                if granted:
                    self._voted_for = candidate
                    if bugs.VOTE_BEFORE_PERSIST not in self._bugs:
                        self._persist()  # persisted before the grant leaves (Ready order)
                    # else BUG (KIP-595 requires the vote durable first): the
                    # grant leaves now and the vote reaches disk only with the
                    # next state change, so a crash in between forgets it.
                    self._reset_election_timer()
                    # What the vote-once invariant and the kill-after-vote trigger watch.
                    self._events.append({"event": VOTE.name, "epoch": epoch,
                                         "candidate": candidate, **self._logs_compared(msg)})
        self._send(
            m.VOTE_RESPONSE,
            candidate,
            granted=granted,
            pre_vote=pre_vote,
            leader=self._leader,
        )

    def _logs_compared(self, msg: dict) -> dict[str, int]:
        """Both logs a grant judged, for the election-restriction invariant
        (KIP-595 / Raft 5.4.1) to re-judge from the line alone."""
        return {"last_epoch": self.last_epoch, "log_end": len(self._log),
                "candidate_last_epoch": int(msg["last_epoch"]),
                "candidate_log_end": int(msg["log_end"])}

    def _grants_pre_vote(self) -> bool:
        if self._role == LEADER:
            return False
        if self._role == FOLLOWER:
            # KIP-996: a follower still hearing from its leader protects it.
            # BUG when switched on (KIP-996 Scenario A): it grants anyway, so a
            # node that cannot reach the leader but reaches this follower wins
            # a pre-vote, then the election: leadership leaves a healthy leader.
            return not self._fetched_from_leader or bugs.PRE_VOTE_WHILE_FOLLOWING in self._bugs
        return True

    def _may_vote(self) -> bool:
        if self._voted_for is not None or self._abstain:
            return False
        return self._role in (UNATTACHED, PROSPECTIVE) and self._leader is None

    def _on_vote_response(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        leader = msg.get("leader")
        if epoch > self._epoch:
            self._observe_epoch(epoch, leader)
            return
        if epoch < self._epoch:
            return
        # A refusal that names this epoch's leader sends us back to it (KIP-996);
        # a grant may name the leader too (a follower that lost touch with it),
        # and is counted instead, or two such followers would never elect anyone.
        refused = not msg["granted"]
        if (
            refused
            and leader is not None
            and leader != self.node_id
            and self._role in (UNATTACHED, PROSPECTIVE, CANDIDATE)
        ):
            self._become_follower(epoch, leader)
            return
        pre_vote = bool(msg["pre_vote"])
        if (self._role == PROSPECTIVE and pre_vote) or (self._role == CANDIDATE and not pre_vote):
            voter = msg["from"]
            if voter not in self.voters:
                return
            if msg["granted"]:
                self._granted.add(voter)
                self._rejected.discard(voter)
            else:
                self._rejected.add(voter)
                self._granted.discard(voter)
            self._count_votes()

    def _on_begin_quorum_epoch(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        leader = msg["from"]
        if epoch > self._epoch:
            self._observe_epoch(epoch, leader)
        elif epoch == self._epoch and self._role in (UNATTACHED, PROSPECTIVE, CANDIDATE):
            self._become_follower(epoch, leader)
        # KIP-595: a stale leader hears FENCED_EPOCH (and our epoch in the header).
        self._send(m.BEGIN_QUORUM_EPOCH_RESPONSE, leader, leader=self._leader,
                   error=m.FENCED_EPOCH if epoch < self._epoch else None)

    def _on_begin_quorum_epoch_response(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        if epoch > self._epoch:
            self._observe_epoch(epoch, msg.get("leader"))
        elif epoch == self._epoch and self._role == LEADER:
            progress = self._replicas.get(msg["from"])
            if progress is not None:
                progress.acknowledged = True

    def _on_end_quorum_epoch(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        if epoch < self._epoch:
            self._send(m.ERROR, msg["from"], error=m.FENCED_EPOCH, in_reply_to=msg["type"])
            return
        if epoch > self._epoch:
            self._observe_epoch(epoch, None)
        elif epoch == self._epoch and self._role == FOLLOWER and self._leader == msg["from"]:
            # The leader gave up: stop shielding it from pre-votes and start
            # canvassing soon, staggered so the followers do not split votes.
            self._fetched_from_leader = False
            self._fetch_deadline = min(
                self._fetch_deadline,
                self._now + 1 + self._rng.randrange(self._cfg.election_timeout_ticks),
            )

    def _on_fetch(self, msg: dict) -> None:
        follower = msg["from"]
        epoch = int(msg["epoch"])
        if epoch > self._epoch:
            self._observe_epoch(epoch, None)
        if epoch < self._epoch:
            self._send_fetch_error(follower, m.FENCED_EPOCH, msg)
            return
        if self._role != LEADER or epoch != self._epoch:
            self._send_fetch_error(follower, m.NOT_LEADER, msg)
            return
        fetch_offset = int(msg["fetch_offset"])
        last_fetched_epoch = int(msg["last_fetched_epoch"])
        progress = self._replicas.get(follower)
        if progress is None:
            # An observer (KIP-853): tracked like a voter for replication,
            # counted for neither the high watermark nor check quorum.
            progress = self._replicas[follower] = _ReplicaProgress(last_fetch_tick=self._now)
        if progress is not None:
            progress.last_fetch_tick = self._now
            progress.acknowledged = True
            if "wall" in msg and bugs.WALL_CLOCK_LEASE in self._bugs:
                # BUG when switched on: a promise in the follower's clock,
                # judged later on ours: right only while both clocks agree.
                lease = float(msg["wall"]) + self._cfg.election_timeout_ticks * self._cfg.tick_s
                progress.lease_until = max(progress.lease_until, lease)
        # A newer fetch from the same follower supersedes the one we hold.
        self._held_fetches.pop(follower, None)
        consistent, diverging_epoch, diverging_end = ec.fetch_is_consistent(
            self._cache, len(self._log), fetch_offset, last_fetched_epoch
        )
        if bugs.TRUNCATE_TO_HW in self._bugs:
            # BUG (pre-KIP-101): offsets alone decide; a follower whose log end
            # is within ours keeps whatever suffix it has, from any epoch.
            consistent = fetch_offset <= len(self._log)
            diverging_epoch, diverging_end = self.last_epoch, len(self._log)
        if bugs.UNKNOWN_EPOCH_NEXT_START in self._bugs and fetch_offset > 0:
            # BUG (KAFKA-6361, what KIP-279 fixed): the epoch the follower names
            # is taken to end where our next larger epoch starts, even if we
            # never had it, and the answer names the follower's epoch back, so
            # it cannot tell (pre-KIP-279 answers carried no epoch). A fetch at
            # or below that offset passes on offsets alone: after a fast
            # fail-over a follower keeps entries of an epoch we never had
            # where we hold older ones.
            diverging_epoch = last_fetched_epoch
            diverging_end = ec.next_epoch_start(self._cache, last_fetched_epoch, len(self._log))
            consistent = fetch_offset <= diverging_end
        if not consistent:
            self._send_fetch_response(follower, fetch_offset, last_fetched_epoch, [],
                                      diverging_epoch, diverging_end)
            return
        if progress is not None:
            progress.match_end = fetch_offset
            reported = min(int(msg["flushed_offset"]), fetch_offset)
            progress.flushed_end = max(progress.flushed_end, reported)
            self._maybe_advance_hw()
            if fetch_offset == len(self._log) and progress.hw_sent >= self._hw:
                # Nothing new for it: hold the fetch and answer the moment there
                # is (ready()), or empty after the fetch interval (tick()).
                self._held_fetches[follower] = _HeldFetch(
                    fetch_offset, last_fetched_epoch, self._now
                )
                return
        self._answer_fetch(follower, fetch_offset, last_fetched_epoch)

    def _answer_fetch(self, follower: str, fetch_offset: int, last_fetched_epoch: int) -> None:
        batch = self._log[fetch_offset : fetch_offset + self._cfg.max_fetch_entries]
        progress = self._replicas.get(follower)
        if progress is not None:
            progress.hw_sent = self._hw
        self._send_fetch_response(follower, fetch_offset, last_fetched_epoch,
                                  m.entries_to_wire(batch))

    def _send_fetch_response(self, follower: str, fetch_offset: int, last_fetched_epoch: int,
                             entries: list, diverging_epoch: int | None = None,
                             diverging_end: int | None = None) -> None:
        """Entries from fetch_offset, or (entries empty) where the follower's log
        diverges from ours (KIP-595 DivergingEpoch)."""
        self._send(
            m.FETCH_RESPONSE,
            follower,
            leader=self.node_id,
            error=None,
            fetch_offset=fetch_offset,
            last_fetched_epoch=last_fetched_epoch,
            high_watermark=self._hw,
            entries=entries,
            diverging_epoch=diverging_epoch,
            diverging_end_offset=diverging_end,
        )

    def _answer_held_fetches(self, expired_only: bool) -> None:
        """Answer held fetches that now have news (new entries or a higher HW),
        or, with ``expired_only``, those held for a whole fetch interval."""
        if not self._held_fetches:
            return
        max_wait = max(1, self._cfg.fetch_interval_ticks)
        for follower, held in list(self._held_fetches.items()):
            if expired_only:
                due = self._now - held.since_tick >= max_wait
            else:
                progress = self._replicas[follower]
                due = len(self._log) > held.fetch_offset or self._hw > progress.hw_sent
            if due:
                del self._held_fetches[follower]
                self._answer_fetch(follower, held.fetch_offset, held.last_fetched_epoch)

    def _send_fetch_error(self, to: str, error: str, request: dict) -> None:
        self._send(
            m.FETCH_RESPONSE,
            to,
            leader=self._leader,
            error=error,
            fetch_offset=request.get("fetch_offset"),
            last_fetched_epoch=request.get("last_fetched_epoch"),
            high_watermark=None,
            entries=[],
            diverging_epoch=None,
            diverging_end_offset=None,
        )

    def _on_fetch_response(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        leader = msg.get("leader")
        if epoch > self._epoch:
            self._observe_epoch(epoch, leader)
            return
        if self._learn_leader_from_fetch_response(epoch, leader, msg):
            return
        if self._role != FOLLOWER or epoch != self._epoch or msg["from"] != self._leader:
            return
        if msg.get("error"):
            # Our leader no longer leads this epoch (it resigned): let pre-votes through.
            self._fetched_from_leader = False
            return
        # Answers to an older fetch describe a log we no longer have.
        if msg["fetch_offset"] != len(self._log) or msg["last_fetched_epoch"] != self.last_epoch:
            return
        self._fetched_from_leader = True
        self._fetch_in_flight = False
        self._fetch_deadline = self._now + self._cfg.fetch_timeout_ticks
        if msg.get("diverging_epoch") is not None:
            cut = ec.truncation_offset(
                self._cache,
                len(self._log),
                int(msg["diverging_epoch"]),
                int(msg["diverging_end_offset"]),
            )
            if bugs.TRUNCATE_TO_HW in self._bugs:
                # BUG (pre-KIP-101): fall back to our high watermark instead of
                # the largest common epoch.
                cut = self._hw
            self._truncate(cut, "diverging-epoch")
            self._send_fetch()
            return
        entries = m.entries_from_wire(msg["entries"])
        if entries:
            # A leader that judged our fetch by offsets alone (the switch
            # above) may send an epoch older than our last: KAFKA-6361's "out
            # of order" case. The epoch cache cannot take it; ask again later.
            if entries[0].offset != len(self._log) or entries[0].epoch < self.last_epoch:
                return
            self._append(entries)
        leader_hw = msg.get("high_watermark")
        if leader_hw is not None:
            self._raise_hw(min(int(leader_hw), len(self._log)))
            self._caught_up = len(self._log) >= int(leader_hw)
            if self._caught_up and self._abstain:
                self._abstain = False
                self._persist()
                self._events.append({"event": VOTES_AGAIN.name, "epoch": self._epoch,
                                     "leader": self._leader, "hw": int(leader_hw)})
        # The leader holds a fetch that has nothing to return (long-poll), so
        # asking again at once costs nothing while idle and nothing waits on a timer.
        self._send_fetch()

    # ------------------------------------------------------------- elections

    def _observe_epoch(self, epoch: int, leader: str | None) -> None:
        """Someone is in a higher epoch: leave ours, following its leader if named."""
        if leader is not None and leader != self.node_id and self._role != LEADER:
            self._become_follower(epoch, leader)
            return
        self._become_unattached(epoch)
        if leader is not None and leader != self.node_id:
            self._become_follower(epoch, leader)

    def _count_votes(self) -> None:
        if len(self._granted) >= self._majority:
            if self._role == PROSPECTIVE:
                self._become_candidate()
            else:
                self._become_leader()
        elif len(self._rejected) > len(self.voters) - self._majority:
            # A lost pre-vote backs off in Unattached/Follower. A lost election
            # waits out its (random) election timeout before canvassing again:
            # two equal candidates that retried at once would bump the epoch
            # in lock-step forever, never letting the best log win.
            if self._role == PROSPECTIVE:
                self._lose_pre_vote()

    def _lose_pre_vote(self) -> None:
        # KIP-996: go back to the known leader if there is one, else wait
        # (Unattached doubles as the back-off before the next pre-vote). The
        # known leader is never ourselves: a resigned leader left its epoch.
        if self._leader is not None:
            self._become_follower(self._epoch, self._leader)
        else:
            self._become_unattached(self._epoch)

    def _become_unattached(self, epoch: int) -> None:
        if epoch > self._epoch:
            self._voted_for = None
        running = self._role in (UNATTACHED, PROSPECTIVE, CANDIDATE, RESIGNED)
        deadline = self._election_deadline
        self._transition(UNATTACHED, epoch, None)
        self._reset_election_timer()
        if running:
            # Hearing of a higher epoch is no reason to wait longer: a node whose
            # timer restarted at every rival's epoch bump could starve forever,
            # though its log may be the only one able to win.
            self._election_deadline = min(self._election_deadline, deadline)

    def _become_prospective(self) -> None:
        if not self._may_canvass():
            self._observer_lost_leader()
            return
        self._transition(PROSPECTIVE, self._epoch, self._leader)
        self._reset_election_timer()
        self._granted = self._own_vote()
        self._rejected = set()
        if not self._cfg.pre_vote or bugs.NO_PRE_VOTE in self._bugs:
            # BUG when switched on (KIP-996's motivation): canvass by bumping
            # the epoch at once, so a node back from a partition unseats a
            # healthy leader with its higher epoch.
            self._become_candidate()
            return
        self._request_votes(pre_vote=True)
        self._discover_leader(exclude=set(self._others()))
        self._count_votes()

    def _become_candidate(self) -> None:
        self._voted_for = self.node_id
        self._transition(CANDIDATE, self._epoch + 1, None)
        self._reset_election_timer()
        self._granted = self._own_vote()
        self._rejected = set()
        self._request_votes(pre_vote=False)
        self._count_votes()

    def _become_follower(self, epoch: int, leader: str) -> None:
        if epoch > self._epoch:
            self._voted_for = None
        self._transition(FOLLOWER, epoch, leader)
        self._start_following()

    def _become_leader(self) -> None:
        self._transition(LEADER, self._epoch, self.node_id)
        self._leader_since = self._now
        self._replicas = {
            v: _ReplicaProgress(last_fetch_tick=self._now)
            for v in self.voters
            if v != self.node_id
        }
        # KIP-595: a record of our own epoch lets the high watermark advance
        # even if no client writes arrive.
        payload = m.leader_change_payload(self.node_id, self._epoch)
        self._append([Entry(len(self._log), self._epoch, payload)])
        self._announce()

    def _resign(self) -> None:
        self._transition(RESIGNED, self._epoch, self.node_id)
        self._replicas = {}
        self._reset_election_timer()
        for voter in self._others():
            self._send(m.END_QUORUM_EPOCH, voter, leader=self.node_id)

    def _request_votes(self, pre_vote: bool) -> None:
        for voter in self._others():
            self._send(
                m.VOTE_REQUEST,
                voter,
                pre_vote=pre_vote,
                last_epoch=self.last_epoch,
                log_end=len(self._log),
            )

    def _transition(self, role: str, epoch: int, leader: str | None) -> None:
        check_transition(self._role, role)
        if self._role == LEADER and role != LEADER:
            self._replicas = {}
            # Their fetchers retry and learn of the change from the answer.
            self._held_fetches = {}
            # Auto-joiners retry on their timer; a later term must not answer them.
            self._voter_acks = {}
        self._role = role
        self._epoch = epoch
        self._leader = leader
        self._persist()
        self._emit_role()

    def _reset_election_timer(self) -> None:
        base = self._cfg.election_timeout_ticks
        self._election_deadline = self._now + base + self._rng.randrange(base)

    # ----------------------------------------------------------- replication

    def _start_following(self) -> None:
        self._fetched_from_leader = False
        self._fetch_deadline = self._now + self._cfg.fetch_timeout_ticks
        self._send_fetch()

    def _may_fetch_again(self) -> bool:
        # One fetch in flight at a time (each answer can carry a full batch);
        # resend only when the answer looks lost.
        retry_after = max(2, self._cfg.fetch_timeout_ticks // 5)
        return not self._fetch_in_flight or self._now - self._fetch_sent_tick >= retry_after

    def _send_fetch(self) -> None:
        if self._join_in_flight:
            return  # one request in flight to the leader at a time (KIP-1186)
        self._next_fetch_tick = self._now + self._cfg.fetch_interval_ticks
        self._fetch_in_flight = True
        self._fetch_sent_tick = self._now
        stamp = {} if self._wall is None else {"wall": self._wall}
        self._send(
            m.FETCH,
            self._leader,
            fetch_offset=len(self._log),
            last_fetched_epoch=self.last_epoch,
            flushed_offset=self._flushed_end,
            **stamp,
        )

    def _leader_tick(self) -> None:
        if self._resign_if_removed():
            return
        window = self._cfg.fetch_timeout_ticks
        # BUG when switched off (KIP-595 check quorum): a leader cut off from
        # the majority never resigns and keeps taking writes it cannot commit.
        check_quorum = self._cfg.check_quorum and bugs.NO_CHECK_QUORUM not in self._bugs
        if check_quorum and self._wall is not None:
            # BUG when switched on (wall-clock-lease): check quorum is the
            # lease, on the wall clock: clocks that disagree stretch it.
            if self._now - self._leader_since >= window and self._wall >= self._lease_until():
                self._resign()
                return
        elif check_quorum and self._now - self._leader_since >= window:
            recent = self._own_count() + sum(
                1 for p in self._voter_progress() if self._now - p.last_fetch_tick < window
            )
            if recent < self._majority:
                self._resign()
                return
        if self._now >= self._next_announce_tick:
            self._announce()
        self._answer_held_fetches(expired_only=True)

    def _announce(self) -> None:
        """(Re)send BeginQuorumEpoch to voters that have not shown up yet."""
        for voter, progress in self._replicas.items():
            if not progress.acknowledged and voter in self.voters:
                self._send(m.BEGIN_QUORUM_EPOCH, voter, leader=self.node_id)
        self._next_announce_tick = self._now + max(1, self._cfg.election_timeout_ticks // 2)

    def _maybe_advance_hw(self) -> None:
        if self._role != LEADER:
            return
        # Redpanda recovery RFC: only offsets durable on a majority count;
        # entries merely written (dirty) on a majority may still be lost.
        if bugs.COMMIT_DIRTY in self._bugs:
            # BUG (what the Redpanda RFC warns of): written-but-unflushed
            # (dirty) offsets count, so a power cut can lose a committed entry.
            durable = sorted(
                [len(self._log)] * self._own_count()
                + [p.match_end for p in self._voter_progress()],
                reverse=True,
            )
        else:
            durable = sorted(
                [self._flushed_end] * self._own_count()
                + [p.flushed_end for p in self._voter_progress()],
                reverse=True,
            )
        candidate = durable[self._majority - 1]
        # Raft: only an entry of our own epoch is committed by counting replicas.
        if candidate > self._hw and self._log[candidate - 1].epoch == self._epoch:
            self._raise_hw(candidate, self._counted_ends())

    def _counted_ends(self) -> dict[str, int]:
        """Each voter's end as the high watermark counted it, this node's own
        included: the line names them so a checker can hold each against that
        voter's own lines (checkers.counted_copies)."""
        dirty = bugs.COMMIT_DIRTY in self._bugs
        counted = {v: p.match_end if dirty else p.flushed_end
                   for v, p in self._replicas.items() if v in self.voters}
        if self._own_count():
            counted[self.node_id] = len(self._log) if dirty else self._flushed_end
        return dict(sorted(counted.items()))

    def _raise_hw(self, hw: int, counted: dict[str, int] | None = None) -> None:
        if hw > self._hw:
            self._hw = hw
            self._hw_changed = True
            line = {"event": HW.name, "hw": hw, "epoch": self._epoch}
            if counted is not None:
                line["counted"] = counted
            self._events.append(line)
            self._after_hw_raised()

    def _append(self, entries: list[Entry]) -> None:
        for entry in entries:
            if ec.note_append(self._cache, entry.epoch, entry.offset):
                self._cache_changed = True
            self._log.append(entry)
        self._pending_append.extend(entries)
        self._note_voter_records(entries)

    def _truncate(self, end: int, reason: str) -> None:
        if end >= len(self._log):
            return
        if end < self._hw:
            raise RuntimeError(
                f"{self.node_id}: truncating to {end} would drop committed entries (hw {self._hw})"
            )
        previous_end = len(self._log)
        del self._log[end:]
        if ec.truncate(self._cache, end):
            self._cache_changed = True
        if self._voter_sets.truncate(end):
            self._on_voters_changed("truncated")
        self._pending_append = [e for e in self._pending_append if e.offset < end]
        self._acks.truncated(end)
        if end < self._disk_end:
            current = self._pending_truncate
            self._pending_truncate = end if current is None else min(current, end)
        self._flushed_end = min(self._flushed_end, end)
        self._events.append(
            {"event": TRUNCATE.name, "from": previous_end, "to": end, "reason": reason}
        )

    # ------------------------------------------------- voter changes (KIP-853)

    def add_voter(self, node: str, ack_when_committed: bool = True) -> int:
        """Leader: append a VotersRecord adding ``node``; its offset. The new set
        is in force at once; ``Ready.acked`` names the offset when the
        operator may be answered: at commit, or (``ack_when_committed`` false,
        KIP-1186) with the append. Refused (VoterChangeRefused) unless ``node`` is an observer
        caught up to the high watermark and no other change is in flight."""
        voters = self._check_voter_change()
        if node in voters:
            raise VoterChangeRefused(m.DUPLICATE_VOTER)
        progress = self._replicas.get(node)
        if (
            progress is None
            or self._now - progress.last_fetch_tick >= self._cfg.fetch_timeout_ticks
            or progress.match_end < self._hw
        ):
            raise VoterChangeRefused(m.NOT_CAUGHT_UP)
        offset = self._append_voters(voters + (node,), "add", node)
        self._acks.proposed(offset, QUORUM if ack_when_committed else LEADER_ACK)
        return offset

    def remove_voter(self, node: str) -> int:
        """Leader: append a VotersRecord without ``node``; its offset. A leader
        that removes itself leads on until the record commits, then resigns."""
        voters = self._check_voter_change()
        if node not in voters:
            raise VoterChangeRefused(m.VOTER_NOT_FOUND)
        if len(voters) == 1:
            raise VoterChangeRefused(m.INVALID_REQUEST)
        offset = self._append_voters(tuple(v for v in voters if v != node), "remove", node)
        self._acks.proposed(offset, QUORUM)
        return offset

    def _check_voter_change(self) -> tuple[str, ...]:
        if self._role != LEADER:
            hint = self._leader if self._leader != self.node_id else None
            raise NotLeader(hint)
        # KIP-853: a leader that has not committed in its own epoch may hold an
        # uncommitted change of a previous leader it does not know is settled.
        if self._hw == 0 or self._log[self._hw - 1].epoch != self._epoch:
            raise VoterChangeRefused(m.NOT_COMMITTED_IN_EPOCH)
        # One change at a time: any majority of the new set then overlaps any
        # majority of the old one, so two leaders cannot be elected.
        # BUG when switched on (what KIP-853's one-change rule prevents): a
        # second change is accepted while the first is uncommitted, so the
        # sets two changes apart may have disjoint majorities.
        if (self._voter_sets.uncommitted(self._hw)
                and bugs.TWO_VOTER_CHANGES not in self._bugs):
            raise VoterChangeRefused(m.VOTER_CHANGE_IN_FLIGHT)
        return self.voters

    def _append_voters(self, voters: tuple[str, ...], change: str, node: str) -> int:
        offset = len(self._log)
        self._events.append({"event": VOTER_CHANGE.name, "change": change, "voter": node,
                             "offset": offset, "epoch": self._epoch})
        self._append([Entry(offset, self._epoch, vs.record_payload(voters))])
        return offset

    def _note_voter_records(self, entries: list[Entry]) -> None:
        changed = False
        for entry in entries:
            changed |= self._voter_sets.note(entry.offset, entry.payload)
        if changed:
            self._on_voters_changed("appended")

    def _on_voters_changed(self, how: str) -> None:
        voters = self.voters
        self._events.append({"event": VOTERS.name, "state": how, "voters": list(voters),
                             "offset": self._voter_sets.last_offset(), "epoch": self._epoch})
        self._persist()
        if self._role == LEADER:
            for v in voters:
                if v != self.node_id and v not in self._replicas:
                    self._replicas[v] = _ReplicaProgress(last_fetch_tick=self._now)

    def _voter_progress(self) -> list[_ReplicaProgress]:
        voters = self.voters
        return [p for v, p in self._replicas.items() if v in voters]

    def _own_count(self) -> int:
        """1 if this node's own log counts toward the quorum, 0 for an observer
        (a leader that removed itself)."""
        return 1 if self.is_voter else 0

    def _after_hw_raised(self) -> None:
        offset = self._voter_sets.last_offset()
        if self._voters_committed_reported < offset < self._hw:
            self._voters_committed_reported = offset
            self._events.append({"event": VOTERS.name, "state": "committed",
                                 "voters": list(self.committed_voters), "offset": offset,
                                 "epoch": self._epoch})
            self._persist()
        for ack_offset in [o for o in self._voter_acks if o < self._hw]:
            self._answer_add_voter(self._voter_acks.pop(ack_offset), None)

    def _own_vote(self) -> set[str]:
        return {self.node_id} if self.is_voter else set()

    def _may_canvass(self) -> bool:
        """A voter canvasses; so does a node whose removal is not yet known to
        be committed (Raft thesis 4.2.2): it may hold the longest log, and the
        remaining voters cannot elect anyone without its vote. It does not
        count its own vote."""
        if self._abstain:
            return False
        if self.is_voter:
            return True
        sets = self._voter_sets
        return sets.uncommitted(self._hw) and self.node_id in sets.at(sets.last_offset())

    def _resign_if_removed(self) -> bool:
        # KIP-853: a leader removed from the voters resigns once that is committed.
        if self.is_voter or self._voter_sets.uncommitted(self._hw):
            return False
        self._resign()
        return True

    def _on_add_raft_voter(self, msg: dict) -> None:
        epoch = int(msg["epoch"])
        if epoch > self._epoch:
            self._observe_epoch(epoch, None)
        requester = msg["from"]
        try:
            offset = self.add_voter(requester, bool(msg["ack_when_committed"]))
        except NotLeader:
            self._answer_add_voter(requester, m.NOT_LEADER)
            return
        except VoterChangeRefused as refused:
            self._answer_add_voter(requester, refused.code)
            return
        if msg["ack_when_committed"]:
            self._voter_acks[offset] = requester
        else:
            self._answer_add_voter(requester, None)

    def _answer_add_voter(self, to: str, error: str | None) -> None:
        self._send(m.ADD_RAFT_VOTER_RESPONSE, to, error=error, leader=self._leader)

    def _on_add_raft_voter_response(self, msg: dict) -> None:
        if not self._join_in_flight:
            return
        self._join_in_flight = False
        self._next_join_tick = self._now + self._cfg.join_retry_ticks
        epoch = int(msg["epoch"])
        if epoch > self._epoch:
            self._observe_epoch(epoch, msg.get("leader"))
        elif self._role == FOLLOWER:
            self._send_fetch()

    def _auto_join_tick(self) -> None:
        """Observer: ask the leader to add us once caught up; retry on a timer.

        Auto-join happens at most once per process, for a node that has not
        been a voter since it started (KAFKA-19850): a voter removed while it
        runs stays an observer, as an operator who removes it means, instead
        of adding itself back at once. Started again, it joins again. Being a
        voter counts only as leader or once caught up with one: a node
        restarted on a log that predates its removal is not one."""
        if self._join_in_flight:
            # The leader may never answer (it resigned, the answer was lost).
            if self._now - self._join_sent_tick >= self._cfg.fetch_timeout_ticks:
                self._join_in_flight = False
                self._next_join_tick = self._now + self._cfg.join_retry_ticks
            return
        if (
            not self._cfg.auto_join
            or self._role != FOLLOWER
            or self.is_voter
            or self._was_voter
            or not self._caught_up
            or self._now < self._next_join_tick
        ):
            return
        self._join_in_flight = True
        self._join_sent_tick = self._now
        self._next_join_tick = self._now + self._cfg.join_retry_ticks
        self._send(m.ADD_RAFT_VOTER, self._leader, ack_when_committed=self._join_waits_for_commit())

    def _join_waits_for_commit(self) -> bool:
        # KIP-1186: auto-join asks for the answer after the local append, so
        # the joiner can go on fetching: the fetch that commits the new set.
        # BUG when switched on (KIP-853 before KIP-1186): it asks for the
        # answer at commit, which needs its own fetch, which waits for the
        # answer: the leader's check quorum expires and it resigns.
        return bugs.ACK_WHEN_COMMITTED_AUTOJOIN in self._bugs

    def _observer_lost_leader(self) -> None:
        """An observer never canvasses: it waits in Unattached and asks the
        bootstrap and known voters who leads (KIP-853 discovery by Fetch)."""
        self._become_unattached(self._epoch)
        self._discover_leader(exclude=set())

    def _discover_leader(self, exclude: set[str]) -> None:
        """Fetch from the bootstrap and known voters (but those in `exclude`)
        to learn who leads. A Prospective voter does so too (KIP-996 with
        KIP-853): its pre-vote reaches only the voters it knows of, and a
        voter removed while cut off may know of none that still leads; the
        leader sends it no BeginQuorumEpoch, so only a fetch finds it."""
        targets = (set(self._cfg.voters) | set(self.voters)) - exclude - {self.node_id}
        for voter in sorted(targets):
            self._send(m.FETCH, voter, fetch_offset=len(self._log),
                       last_fetched_epoch=self.last_epoch, flushed_offset=self._flushed_end)

    def _learn_leader_from_fetch_response(self, epoch: int, leader: str | None,
                                          msg: dict) -> bool:
        """An Unattached or Prospective node that fetched to find the leader
        follows the one named in its own epoch (a higher epoch was handled
        already). KIP-996 lets Prospective go back to Follower on any response
        naming a leader; it shields that leader from pre-votes only once it
        has fetched from it. A refusal that names its own sender comes from a
        leader that resigned the epoch: following it would only wait out
        another fetch timeout."""
        if (
            self._role in (UNATTACHED, PROSPECTIVE)
            and epoch == self._epoch
            and leader is not None
            and leader != self.node_id
            and not (msg.get("error") and leader == msg["from"])
        ):
            self._become_follower(epoch, leader)
            return True
        return False

    # ---------------------------------------------------------------- output

    def _others(self) -> list[str]:
        return [v for v in self.voters if v != self.node_id]

    def _send(self, kind: str, to: str | None, **fields: Any) -> None:
        # `to` None: a follower that knows no leader yet; no link takes it.
        self._outbox.append(
            m.message(kind, self.node_id, to, self._cfg.cluster_id, self._epoch, **fields)
        )

    def _persist(self) -> None:
        in_force = self._voter_sets.in_force()
        committed = self._voter_sets.at(self._hw)
        # None stands for the bootstrap voters of the node's configuration.
        bootstrap = self._voter_sets.bootstrap
        state = QuorumState(
            self._epoch, self._leader, self._voted_for, self._cfg.cluster_id,
            applied_offset=self._voter_sets.last_offset(),
            current_voters=committed if committed != bootstrap else None,
            target_voters=in_force if in_force != committed else None,
            abstain=self._abstain,
        )
        if state != self._persisted:
            self._persisted = state
            self._pending_state = state

    def _emit_role(self) -> None:
        self._events.append(
            {"event": ROLE.name, "role": self._role, "epoch": self._epoch, "leader": self._leader}
        )
