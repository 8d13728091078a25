"""The secret of a Spark Connect server that `faultline spark serve` starts.

Spark Connect runs whatever a client sends (a UDF is Python code) as the
server's user, root on a faultline host; bound to loopback it is still open
to every local user. So each server gets a fresh token (Spark's own
`spark.connect.authenticate.token`, handed to the JVM in its environment,
never on its command line) and refuses a client without it. The token is
kept in a file only the server's owner can read, one per port, where
faultline's own clients (`check --remote`, campaigns) find it.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

# PySpark's client and the Spark Connect server both read the token from here.
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
# Where the token files are, if not the default (tests, a second user).
TOKEN_DIR_ENV = "FAULTLINE_SPARK_TOKEN_DIR"
ROOT_TOKEN_DIR = Path("/run/faultline/spark-connect")


class UnsafeTokenDir(Exception):
    """The token directory is not private to this user: one sentence saying why."""


def token_dir() -> Path:
    if os.environ.get(TOKEN_DIR_ENV):
        return Path(os.environ[TOKEN_DIR_ENV])
    if os.geteuid() == 0:
        return ROOT_TOKEN_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return (Path(runtime) if runtime else Path.home() / ".cache") / "faultline" / "spark-connect"


def token_file(port: int) -> Path:
    return token_dir() / f"{port}.token"


def _is_private(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _private_dir() -> Path:
    """token_dir(), made 0700 if missing; refused if anyone else could look in
    or swap it (not a real directory of ours, or open to group or others)."""
    d = token_dir()
    d.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        d.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or not _is_private(st):
        raise UnsafeTokenDir(f"{d} must be a directory of this user's that no one else can "
                             f"read (mode 0700); remove it or fix its owner and mode")
    return d


def new_token(port: int) -> str:
    """A fresh token for the server about to listen on `port`, written 0600."""
    token = secrets.token_urlsafe(32)
    d = _private_dir()
    tmp = d / f".{port}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, token_file(port))
    return token


def read_token(port: int) -> str | None:
    """The token of the server on `port`, or None when there is no token file
    of ours (no server of ours there) or it is not private: another user's
    file is never trusted."""
    try:
        if not _is_private(os.lstat(token_dir())):
            return None
        fd = os.open(token_file(port), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not _is_private(os.fstat(fd)):
            return None
        return os.read(fd, 4096).decode(errors="replace").strip() or None
    finally:
        os.close(fd)


def forget_token(port: int, token: str) -> None:
    """Remove the token file of a server that stopped, unless a newer server's
    token has replaced it."""
    if read_token(port) == token:
        token_file(port).unlink(missing_ok=True)
