"""An anomaly in one human sentence: the one reading every reader of verdicts
(the gate, its JUnit report, a campaign's summary.txt, the run report) uses.

An anomaly that carries its own "explanation" (Elle's, the stats checker's)
says it best. Every other kind a checker reports has a sentence in
`SENTENCES`, keyed by the anomaly's "type". Verdicts may come from old or
foreign runs, so a sentence whose fields do not fit falls back to the
generic one, which names the kind and lists whole fields (a long value is
shortened item by item, a field that does not fit is counted, never cut
halfway) instead of dumping JSON. Pure: dicts in, strings out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_CHARS = 400      # a sentence longer than this drops whole fields, never half of one
ITEMS = 4            # items of a list (keys of a dict) shown before "… N more"
TEXT_CHARS = 80      # a string value longer than this ends at a word with "…"
FIRST = 3            # sentences listed before "and N more"


def value_text(x: Any, depth: int = 0) -> str:
    """A value, short and readable: lists and dicts show their first items and
    count the rest, a long string ends at a word."""
    if isinstance(x, str):
        if len(x) <= TEXT_CHARS:
            return x
        cut = x[:TEXT_CHARS].rsplit(" ", 1)[0] or x[:TEXT_CHARS]
        return cut + "…"
    if isinstance(x, bool) or x is None:
        return {True: "true", False: "false", None: "none"}[x]
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, (list, tuple)):
        if depth >= 2:
            return f"[{len(x)} items]"
        shown = ", ".join(value_text(v, depth + 1) for v in x[:ITEMS])
        more = f", … {len(x) - ITEMS} more" if len(x) > ITEMS else ""
        return f"[{shown}{more}]"
    if isinstance(x, dict):
        if depth >= 2:
            return f"{{{len(x)} fields}}"
        items = list(x.items())
        shown = ", ".join(f"{k} {value_text(v, depth + 1)}" for k, v in items[:ITEMS])
        more = f", … {len(items) - ITEMS} more" if len(items) > ITEMS else ""
        return f"{{{shown}{more}}}"
    return str(x)


def _fields(pairs: list[tuple[str, Any]], room: int) -> str:
    """`name value` pairs joined with commas, as many whole ones as fit in `room`."""
    parts: list[str] = []
    used = 0
    for i, (k, v) in enumerate(pairs):
        part = f"{k.replace('_', ' ')} {value_text(v)}"
        rest = len(pairs) - i - 1
        tail = len(f", and {rest + 1} more fields") if rest else 0
        if parts and used + len(part) + 2 + tail > room:
            return ", ".join(parts) + f", and {len(pairs) - i} more fields"
        parts.append(part)
        used += len(part) + 2
    return ", ".join(parts)


def generic(anomaly: dict[str, Any]) -> str:
    """Any anomaly, kind known or not: its kind in words and its fields."""
    kind = anomaly.get("type")
    pairs = [(str(k), v) for k, v in anomaly.items() if k != "type"]
    words = str(kind).replace("-", " ")
    article = "An" if words[:1].lower() in ("a", "e", "i", "o", "u") else "A"
    head = f"{article} {words} anomaly" if kind is not None else "An anomaly of no named kind"
    if not pairs:
        return head + "."
    return f"{head}: {_fields(pairs, MAX_CHARS - len(head) - 3)}."


def sentence(anomaly: Any) -> str:
    """One anomaly in one sentence."""
    if not isinstance(anomaly, dict):
        return f"An anomaly: {value_text(anomaly)}."
    if isinstance(anomaly.get("explanation"), str) and anomaly["explanation"].strip():
        return anomaly["explanation"]
    kind: Any = anomaly.get("type")
    reader = SENTENCES.get(kind) or _contributed().get(kind)
    if reader is not None:
        try:
            text = reader(anomaly)
        except Exception:  # a field of another shape than this kind's reader expects
            text = ""
        if text and len(text) <= MAX_CHARS:
            return text
    return generic(anomaly)


def _contributed() -> dict[str, Callable[[dict[str, Any]], str]]:
    """The sentences systems and plug-ins bring with their checkers (the bundled
    store's own kinds among them), loaded with the checker registry."""
    from checkers.registry import SENTENCES as CONTRIBUTED
    return CONTRIBUTED


def sentences(anomalies: list[Any], first: int = FIRST) -> list[str]:
    """The first few anomalies, one sentence each, then "and N more"."""
    out = [sentence(a) for a in anomalies[:first]]
    if len(anomalies) > first:
        rest = len(anomalies) - first
        out.append(f"and {rest} more anomal{'y' if rest == 1 else 'ies'} (verdicts.json "
                   "has them all)")
    return out


# --- the sentences, by kind ------------------------------------------------

def _v(x: Any) -> str:
    return value_text(x)


def _key(a: dict[str, Any]) -> str:
    return "" if a.get("key") is None else f" (key {_v(a['key'])})"


def _op(ref: Any) -> str:
    if not isinstance(ref, dict):
        return "an op"
    return (f"{ref.get('f')} {_v(ref.get('value'))} by process {_v(ref.get('process'))} "
            f"(history index {_v(ref.get('index'))})")


def _node(a: dict[str, Any]) -> str:
    return f"Node {a['node']}"


def _nonlinearizable(a: dict[str, Any]) -> str:
    op = a["op"] or {}
    return (f"Not linearizable{_key(a)}: after {_v(a['linearized_count'])} ops in a "
            f"valid order, with state {_v(a.get('state'))}, the op "
            f"{_v(op.get('what'))} by process {_v(op.get('process'))} (history "
            f"index {_v(op.get('index'))}) has no valid place. See "
            "linearizability.html.")


def _search_incomplete(a: dict[str, Any]) -> str:
    return f"The linearizability search{_key(a)} did not finish: {_v(a['reason'])}."


def _ill_formed(a: dict[str, Any]) -> str:
    return f"The history is ill-formed: {_v(a['reason'])}."


def _unavailable(kind: str) -> Callable[[dict[str, Any]], str]:
    why = "" if kind == "unavailable" else ", with no fault to explain it"

    def read(a: dict[str, Any]) -> str:
        faults = ", ".join(str(f.get("f")) for f in a.get("faults") or []
                           if isinstance(f, dict))
        return (f"No op succeeded for {a['duration_s']} s, from {a['start_s']} s to "
                f"{a['end_s']} s (limit {a.get('limit_s')} s){why}; faults then: "
                f"{faults or 'none'}.")
    return read


def _divergence(a: dict[str, Any]) -> str:
    first, last = a["offsets"]
    parts = [f"{n} has epoch(s) {', '.join(map(str, s['epochs']))}"
             for n, s in a["sides"].items()]
    where = "both hold as committed" if a.get("why") == "committed" else f"({a.get('why')})"
    return (f"Replicas {' and '.join(map(str, a['nodes']))} disagree on {a.get('count')} log "
            f"entries at offsets {first}..{last}, which {where}: {'; '.join(parts)}.")


def _lost_committed(a: dict[str, Any]) -> str:
    who = f"Node {a['node']}" if a.get("node") is not None else "The cluster"
    return (f"{who} lost {len(a['offsets'])} committed entries (committed up to "
            f"{a.get('committed_end')}): offsets {_v(a['offsets'])}.")


def _committed_truncated(a: dict[str, Any]) -> str:
    first, last = a["offsets"]
    return (f"{_node(a)} truncated its log at offsets {first}..{last}, entries it had "
            "already seen committed.")


def _unknown_epoch(a: dict[str, Any]) -> str:
    return (f"{_node(a)} holds {a['count']} log entries of epoch {a['epoch']} (offsets "
            f"{_v(a['offsets'])}), an epoch no leader ever had.")


def _truncated_list(a: dict[str, Any]) -> str:
    return f"And {a['omitted']} more {a['rule']} anomalies the checker did not list."


def _multiple_leaders(a: dict[str, Any]) -> str:
    return (f"Two leaders in one epoch: {', '.join(map(str, a['leaders']))} all led epoch "
            f"{a['epoch']}.")


def _lost_write(a: dict[str, Any]) -> str:
    where = f" in log {_v(a['log'])}" if a.get("log") is not None else _key(a)
    return (f"Lost write{where}: {_v(a.get('value'))} was acknowledged "
            f"({_op(a.get('ack') or a.get('write'))}) but is in no final read or "
            "replica log.")


def _read_of(kind: str) -> Callable[[dict[str, Any]], str]:
    why = {"phantom-read": "a value never written", "aborted-read": "a failed write's value"}

    def read(a: dict[str, Any]) -> str:
        return (f"{kind.replace('-', ' ').capitalize()}{_key(a)}: {_op(a.get('read'))} saw "
                f"{_v(a.get('value'))}, {why[kind]}.")
    return read


def _failed_write_committed(a: dict[str, Any]) -> str:
    return (f"Failed write committed{_key(a)}: {_v(a['value'])} was reported failed "
            f"({_op(a.get('fail'))}) yet the replica logs hold it at offsets "
            f"{_v(a['offsets'])}.")


def _duplicate_append(a: dict[str, Any]) -> str:
    if a.get("evidence") == "read":
        return (f"Duplicate append{_key(a)}: {_op(a.get('read'))} saw "
                f"{_v(a['values'])} more than once.")
    return f"Duplicate append: {_v(a['value'])} is in the log at offsets {_v(a['offsets'])}."


def _offset_changed(a: dict[str, Any]) -> str:
    first, then = a["offsets"]
    return (f"Offset changed in log {_v(a['log'])}: {_v(a['value'])} was read at offset "
            f"{first}, later at {then} ({_op(a.get('then'))}).")


def _offset_conflict(a: dict[str, Any]) -> str:
    one, other = a["values"]
    return (f"Offset conflict in log {_v(a['log'])}: offset {a['offset']} was read holding "
            f"{_v(one)} and later {_v(other)} ({_op(a.get('then'))}).")


def _read_out_of_order(a: dict[str, Any]) -> str:
    return (f"Read out of order in log {_v(a['log'])}: {_op(a.get('read'))} returned "
            f"offsets {_v(a['offsets'])}.")


def _read_went_backwards(a: dict[str, Any]) -> str:
    return (f"Read went backwards in log {_v(a['log'])}: process {_v(a['process'])} had "
            f"seen offset {a['seen_offset']}, then read only up to {a['read_up_to']}.")


def _leader_changes_after_heal(a: dict[str, Any]) -> str:
    heal = a["heal"]
    return (f"{a['count']} leader changes after the heal {heal['f']} at {heal['time_s']} s "
            f"(limit {a['limit']}).")


def _quiet_leader_changes(a: dict[str, Any]) -> str:
    return (f"{a['count']} leader changes while no fault was active (limit "
            f"{a['limit']}).")


# availability, convergence
def _unavailable_while_healthy(a: dict[str, Any]) -> str:
    return (f"No op succeeded from {a['start_s']} s to {a['end_s']} s; for {a['unexcused_s']} s "
            f"of it (from {a['unexcused'][0]} s) no fault had taken a quorum or the leader "
            f"and no failover was under way (limit {a.get('limit_s')} s).")


def _unavailable_while_healthy_summed(a: dict[str, Any]) -> str:
    return (f"In {a['windows']} windows without a successful op (from {a['start_s']} s to "
            f"{a['end_s']} s), each within the limit, {a['unexcused_s']} s in all passed with "
            f"no fault taking a quorum or the leader and no failover under way (limit "
            f"{a.get('limit_s')} s in all).")


def _leader_change_while_healthy(a: dict[str, Any]) -> str:
    out = "; ".join(f"{', '.join(f['out']) or 'no node'} out, {f['cut']} link(s) cut from "
                    f"{f['from_s']} s" for f in a.get("in_force") or [])
    return (f"Leader {a['node']} (epoch {a['epoch']}) lost its leadership at {a['time_s']} s "
            f"({a['how']}), though since {a['no_trouble_since_s']} s a quorum was connected "
            f"and it was up and linked to a majority{f' ({out})' if out else ''}.")


def _unconverged(a: dict[str, Any]) -> str:
    return (f"Node {a['node']} did not converge ({a['why']}) after the run waited "
            f"{a.get('waited_s')} s (bound {a.get('bound_s')} s) for its nodes to agree.")


# node-state, node-logs
def _divergent_state(a: dict[str, Any]) -> str:
    nodes = " and ".join(map(str, a["nodes"]))
    if a.get("key") is None:
        return (f"Nodes {nodes} at position {_v(a.get('position'))} hold different "
                f"applied states: {_v(a.get('detail'))}.")
    values = "; ".join(f"{n} has {_v(v)}" for n, v in (a.get("values") or {}).items())
    return (f"Nodes {nodes} at position {_v(a.get('position'))} hold different values "
            f"of key {_v(a['key'])}: {values}.")


def _divergent_list(a: dict[str, Any]) -> str:
    values = "; ".join(f"{n} has {_v(v)}" for n, v in (a.get("values") or {}).items())
    return (f"Nodes {' and '.join(map(str, a['nodes']))} disagree on key {_v(a['key'])} "
            f"at element {_v(a['index'])}, so neither list is a prefix of the other: "
            f"{values}.")


def _stale_value(a: dict[str, Any]) -> str:
    return (f"{_node(a)} ends holding {_v(a['value'])} for key {_v(a['key'])}, but the "
            f"write of {_v(a['overwritten_with'])} (history index "
            f"{_v(a['overwritten_by'])}) was acknowledged after it.")


def _unwritten_value(a: dict[str, Any]) -> str:
    failed = (f" (only a write that failed, history index {_v(a['failed_write'])}, wrote it)"
              if a.get("failed_write") is not None else "")
    return (f"{_node(a)} ends holding {_v(a['value'])} for key {_v(a['key'])}, a value "
            f"no acknowledged or indeterminate write wrote{failed}.")


def _element(what: str) -> Callable[[dict[str, Any]], str]:
    def read(a: dict[str, Any]) -> str:
        return (f"{_node(a)} holds {_v(a['value'])} at element {_v(a['index'])} of key "
                f"{_v(a['key'])}, {what}.")
    return read


def _failed_append_applied(a: dict[str, Any]) -> str:
    return (f"{_node(a)} holds {_v(a['value'])} at element {_v(a['index'])} of key "
            f"{_v(a['key'])}, though its append (history index {_v(a['append'])}) failed.")


def _lost_append(a: dict[str, Any]) -> str:
    where = (f" at offset {_v(a['offset'])} (it holds {_v(a.get('held'))})"
             if a.get("offset") is not None else "")
    return (f"{_node(a)} lacks the acknowledged append of {_v(a['value'])} to "
            f"{_v(a['key'])}{where} (history index {_v(a['append'])}).")


def _node_log_failure(a: dict[str, Any]) -> str:
    return (f"{_node(a)} tripped over itself: {a['file']} line {_v(a['line'])} reads "
            f"\"{_v(a['text'])}\".")


# read-commit-point
def _read_behind_commit_point(a: dict[str, Any]) -> str:
    return (f"Process {_v(a['process'])}'s read of key {_v(a['key'])} (invoked at "
            f"{_v(a['invoke_s'])} s, ok at {_v(a['complete_s'])} s) was answered by node "
            f"{a['node']} at commit point {_v(a['node_hw'])}, below the {_v(a['announced_hw'])} "
            f"node {a['announced_by']} had announced before it began.")


SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    # linearizability
    "nonlinearizable": _nonlinearizable,
    "search-incomplete": _search_incomplete,
    "ill-formed-history": _ill_formed,
    # availability
    "unavailable": _unavailable("unavailable"),
    "unexplained-unavailable": _unavailable("unexplained-unavailable"),
    "leader-changes-after-heal": _leader_changes_after_heal,
    "quiet-leader-changes": _quiet_leader_changes,
    "unavailable-while-healthy": _unavailable_while_healthy,
    "unavailable-while-healthy-summed": _unavailable_while_healthy_summed,
    "leader-change-while-healthy": _leader_change_while_healthy,
    "unconverged": _unconverged,
    # divergence
    "divergence": _divergence,
    "lost-committed": _lost_committed,
    "committed-truncated": _committed_truncated,
    "unknown-epoch": _unknown_epoch,
    "truncated-list": _truncated_list,
    # elections
    "multiple-leaders": _multiple_leaders,
    # durability
    "lost-write": _lost_write,
    "phantom-read": _read_of("phantom-read"),
    "aborted-read": _read_of("aborted-read"),
    "failed-write-committed": _failed_write_committed,
    "duplicate-append": _duplicate_append,
    "offset-changed": _offset_changed,
    "offset-conflict": _offset_conflict,
    "read-out-of-order": _read_out_of_order,
    "read-went-backwards": _read_went_backwards,
    # node-state, node-logs
    "divergent-state": _divergent_state,
    "divergent-list": _divergent_list,
    "stale-value": _stale_value,
    "unwritten-value": _unwritten_value,
    "duplicate-element": _element("a second time"),
    "unwritten-element": _element("an element no append wrote"),
    "failed-append-applied": _failed_append_applied,
    "lost-append": _lost_append,
    "node-log-failure": _node_log_failure,
    # read-commit-point
    "read-behind-commit-point": _read_behind_commit_point,
}
