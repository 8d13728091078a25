"""How faultline starts a Python child process (a node, a client worker, a
campaign worker, the watchdog, LazyFS).

`python -m` puts the current directory first on the child's sys.path, so a
`msgpack.py` (or `json.py`) in the directory where `faultline run` is typed
would run as root in every child. `-P` leaves it off; the children find
faultline's packages where the parent does, in the installed site-packages
(an editable install's finder included), and PYTHONPATH, which a user sets
on purpose, still counts.
"""

from __future__ import annotations

import sys


def module_argv(module: str, *args: str) -> list[str]:
    """argv running `module` under this interpreter, the cwd kept off sys.path."""
    return [sys.executable, "-P", "-m", module, *args]
