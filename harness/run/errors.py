"""Exit statuses and the errors that map to them: one place for every command.

Jepsen's convention: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or
unusable input (one sentence on stderr, nothing started, nothing left), 255
the harness itself failed. A script can tell "the system is broken" (1) from
"we could not tell" (2) from "you called it wrong" (254) from "we broke" (255).
"""

from __future__ import annotations

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_HARNESS_ERROR = 255
# Ctrl-C: the shell's convention (128 + SIGINT); the run is kept, marked interrupted.
EXIT_INTERRUPTED = 130

EXIT_STATUS_HELP = ("exit status: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or "
                    "unusable input (nothing started), 255 harness error, 130 interrupted "
                    "(Ctrl-C), 143 terminated (SIGTERM)")


class UserError(Exception):
    """A mistake of the user's or an unusable input: one sentence, exit 254."""


class HarnessError(Exception):
    """The harness itself failed (not the system under test): exit 255."""
