"""The network world of one run: a hub namespace holding a bridge, one
namespace per node, and a veth from the bridge to each node.

Veths are created from inside the hub with their peer placed straight into
the node's namespace, so nothing ever appears in the host's namespace. Each
hub is its own network, so the subnet is fixed; namespace names carry the
run id so concurrent runs never collide.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import psutil

from nemesis.address_plan import (  # noqa: F401 (re-exported: the plan's names)
    FIRST_NODE_HOST,
    HUB_ADDRESS,
    MAX_NODES,
    PREFIX_LEN,
    SUBNET_PREFIX,
    node_address,
)
from nemesis.cgroups import join_cgroups

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
BRIDGE = "br0"

_libc = ctypes.CDLL(None, use_errno=True)
# pyroute2 (311 modules, a quarter of `faultline --help`'s CPU time) is imported where a topology is
# built, not here: every fault module sits on this one (the fault registry
# imports them all), and `faultline --help` needs none of it.


def _setns_fd(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns failed: {os.strerror(err)}")


def pids_in_netns(name: str) -> list[int]:
    """Processes whose network namespace is the named one (found even with no journal)."""
    try:
        target = os.stat(NETNS_DIR / name).st_ino
    except FileNotFoundError:
        return []
    pids = []
    for pid in psutil.pids():
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == target and pid != os.getpid():
                pids.append(pid)
        except OSError:
            continue
    return pids


def netns_of_run(run_id: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(netns_prefix(run_id)))
    except FileNotFoundError:
        return []


def netns_prefix(run_id: str) -> str:
    return f"fl-{run_id}-"


def remove_netns(name: str) -> bool:
    path = NETNS_DIR / name
    if not path.exists():
        return False
    _libc.umount2(str(path).encode(), 2)  # MNT_DETACH
    path.unlink(missing_ok=True)
    return True


class Journal(Protocol):
    """Where a topology records what it creates, so a sweeper can remove it
    after a crash (harness.run.resources.ResourceLog)."""

    def add(self, kind: str, **fields: Any) -> int: ...

    def release(self, rid: int) -> None: ...


def setns(name: str) -> None:
    """Move the calling thread into a named namespace; never creates one
    (pyroute2's setns would silently create a missing namespace)."""
    fd = os.open(NETNS_DIR / name, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns_fd(fd)
    finally:
        os.close(fd)


@contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Run the body on this thread inside namespace `name`.

    Only the calling thread moves: sockets it creates belong to `name`, and
    threads it starts inside the block are born there too. Saved from
    /proc/thread-self so nested use and use off the main thread are right.
    """
    saved = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(name)
        try:
            yield
        finally:
            _setns_fd(saved)
    finally:
        os.close(saved)


def preexec_setns(name: str, die_with_parent_thread: bool = False) -> Callable[[], None]:
    """A Popen preexec_fn putting the child in `name` (not `ip netns exec`,
    which also unshares the mount namespace and hides later FUSE mounts)."""
    return preexec_in_netns(name, die_with_parent_thread)


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child, before exec: SIGKILL me when the thread that forked me exits
    (the harness, SIGKILLed or not). Fails only on a kernel without prctl."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")


def preexec_in_netns(name: str, die_with_parent_thread: bool,
                     cgroups: Sequence[Path] = ()) -> Callable[[], None]:
    def enter() -> None:
        if die_with_parent_thread:
            die_with_parent()
        join_cgroups(cgroups)
        setns(name)
    return enter


def popen_in_netns(name: str, argv: list[str], die_with_parent: bool = False,
                   cgroups: Sequence[Path] = (), **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start `argv` in namespace `name`; `die_with_parent`: SIGKILLed when the
    forking thread exits (fork from a thread that lives as long as the child
    should); `cgroups`: groups it joins before it runs (nemesis.host)."""
    return subprocess.Popen(argv, preexec_fn=preexec_in_netns(name, die_with_parent, cgroups),
                            **kwargs)


def run_in_netns(name: str, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(argv, preexec_fn=preexec_setns(name), **kwargs)


class Topology:
    """Hub + bridge + one namespace and address per node, journalled as built."""

    def __init__(self, run_id: str, node_names: list[str],
                 resources: Journal | None = None) -> None:
        if len(set(node_names)) != len(node_names):
            raise ValueError(f"duplicate node names in {node_names}")
        self.run_id = run_id
        self.node_names = list(node_names)
        self.resources = resources
        prefix = netns_prefix(run_id)
        self.hub = prefix + "hub"
        self.netns = {name: f"{prefix}{name}" for name in node_names}
        self.ips = {name: node_address(i) for i, name in enumerate(node_names)}
        self._records: dict[str, int] = {}
        self._lock = threading.Lock()

    def _create_netns(self, name: str) -> None:
        if self.resources is not None:
            self._records[name] = self.resources.add("netns", name=name)
        from pyroute2 import netns
        netns.create(name)

    def build(self) -> None:
        """Create everything; on failure, removes what it made and re-raises."""
        try:
            self._create_netns(self.hub)
            for name in self.node_names:
                self._create_netns(self.netns[name])
            self._build_hub()
            for name in self.node_names:
                self._configure_node(name)
        except BaseException:
            self.teardown()
            raise

    def _build_hub(self) -> None:
        from pyroute2 import IPRoute
        with in_netns(self.hub), IPRoute() as ipr:
            ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            ipr.link("add", ifname=BRIDGE, kind="bridge")
            bridge = ipr.link_lookup(ifname=BRIDGE)[0]
            ipr.addr("add", index=bridge, address=HUB_ADDRESS, prefixlen=PREFIX_LEN)
            ipr.link("set", index=bridge, state="up")
            for i, name in enumerate(self.node_names):
                host_side = f"veth{i}"
                if self.resources is not None:
                    self._records[host_side] = self.resources.add(
                        "veth", name=host_side, netns=self.hub)
                ipr.link("add", ifname=host_side, kind="veth",
                         peer={"ifname": "eth0", "net_ns_fd": self.netns[name]})
                ipr.link("set", index=ipr.link_lookup(ifname=host_side)[0],
                         master=bridge, state="up")

    def _configure_node(self, name: str) -> None:
        from pyroute2 import IPRoute
        with in_netns(self.netns[name]), IPRoute() as ipr:
            ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            eth = ipr.link_lookup(ifname="eth0")[0]
            ipr.addr("add", index=eth, address=self.ips[name], prefixlen=PREFIX_LEN)
            ipr.link("set", index=eth, state="up")

    @contextmanager
    def in_hub(self) -> Iterator[None]:
        with in_netns(self.hub):
            yield

    def namespaces(self) -> list[str]:
        return [self.hub] + [self.netns[n] for n in self.node_names]

    def teardown(self) -> None:
        """Delete every namespace (their veths and nft tables go with them). Idempotent."""
        with self._lock:
            for name in reversed(self.namespaces()):
                remove_netns(name)
                rid = self._records.pop(name, None)
                if rid is not None and self.resources is not None:
                    self.resources.release(rid)
            for key in [k for k in self._records if k.startswith("veth")]:
                if self.resources is not None:
                    self.resources.release(self._records.pop(key))
