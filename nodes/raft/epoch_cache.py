"""The leader-epoch cache: which epoch wrote which range of the log.

The cache is a list of ``(epoch, start_offset)`` pairs, epochs strictly
increasing, start offsets non-decreasing. Epoch ``e`` covers the offsets from
its start up to the next pair's start (or the log end for the last pair).
All functions here are pure so the KIP-279 truncation rules can be tested
on their own.
"""

from __future__ import annotations

from collections.abc import Iterable

EpochCache = list[tuple[int, int]]

# Epoch "0" is below every real epoch: a diverging answer naming it means the
# two logs share no epoch at all, so the follower keeps nothing.
NO_EPOCH = 0


def build(entries: Iterable[tuple[int, int]]) -> EpochCache:
    """Cache for a log given as ``(offset, epoch)`` pairs in offset order."""
    cache: EpochCache = []
    for offset, epoch in entries:
        if not cache or epoch > cache[-1][0]:
            cache.append((epoch, offset))
        elif epoch < cache[-1][0]:
            raise ValueError(f"epoch goes backwards at offset {offset}: {epoch} < {cache[-1][0]}")
    return cache


def note_append(cache: EpochCache, epoch: int, offset: int) -> bool:
    """Record that ``offset`` was written in ``epoch``; True if the cache changed."""
    if cache and epoch < cache[-1][0]:
        raise ValueError(f"append of epoch {epoch} after epoch {cache[-1][0]}")
    if not cache or epoch > cache[-1][0]:
        cache.append((epoch, offset))
        return True
    return False


def truncate(cache: EpochCache, end_offset: int) -> bool:
    """Forget epochs that start at or after ``end_offset``; True if the cache changed."""
    before = len(cache)
    while cache and cache[-1][1] >= end_offset:
        cache.pop()
    return len(cache) != before


def last_epoch(cache: EpochCache) -> int:
    return cache[-1][0] if cache else NO_EPOCH


def end_offset_for_epoch(cache: EpochCache, epoch: int, log_end: int) -> tuple[int, int]:
    """KIP-279: the largest epoch <= ``epoch`` this log knows, and that epoch's end offset.

    Returns ``(NO_EPOCH, 0)`` when the log has no such epoch.
    """
    for i in range(len(cache) - 1, -1, -1):
        cached_epoch, _ = cache[i]
        if cached_epoch <= epoch:
            end = cache[i + 1][1] if i + 1 < len(cache) else log_end
            return cached_epoch, end
    return NO_EPOCH, 0


def next_epoch_start(cache: EpochCache, epoch: int, log_end: int) -> int:
    """What OffsetForLeaderEpoch answered before KIP-279: the start offset of
    the first epoch larger than ``epoch`` (the log end if there is none),
    whether or not this log ever had ``epoch``. Only the
    ``unknown-epoch-next-start`` bug switch uses it (KAFKA-6361)."""
    for cached_epoch, start in cache:
        if cached_epoch > epoch:
            return start
    return log_end


def fetch_is_consistent(
    cache: EpochCache, log_end: int, fetch_offset: int, last_fetched_epoch: int
) -> tuple[bool, int, int]:
    """Leader side of KIP-595 fetch validation.

    A follower at ``fetch_offset`` whose last entry has ``last_fetched_epoch``
    shares the leader's prefix iff the leader knows that very epoch and the
    epoch extends at least to ``fetch_offset``. Otherwise the answer names the
    diverging epoch and its end offset, which the follower truncates to.
    Returns ``(consistent, diverging_epoch, diverging_end_offset)``.
    """
    if fetch_offset == 0:
        return True, NO_EPOCH, 0
    epoch, end = end_offset_for_epoch(cache, last_fetched_epoch, log_end)
    if epoch == last_fetched_epoch and fetch_offset <= end:
        return True, epoch, end
    return False, epoch, end


def truncation_offset(
    cache: EpochCache, log_end: int, diverging_epoch: int, diverging_end_offset: int
) -> int:
    """Follower side of KIP-279: where to cut the log after a diverging answer.

    If the follower knows the leader's epoch, both logs agree up to the smaller
    of the two end offsets of that epoch. If it does not, it cuts back to the
    end of its own largest earlier epoch and asks again: the next answer is
    about an epoch both may know (one round trip per unknown epoch).
    """
    local_epoch, local_end = end_offset_for_epoch(cache, diverging_epoch, log_end)
    if local_epoch == NO_EPOCH:
        return 0
    if local_epoch == diverging_epoch:
        return min(local_end, diverging_end_offset, log_end)
    return min(local_end, log_end)
