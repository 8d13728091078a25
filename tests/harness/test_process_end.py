"""`harness.commands.process_end`: what a command hands over is not freed when the
process ends after it (the operating system takes the memory back), and only
the last command's is held in a process that runs many."""

import subprocess
import sys

from harness.commands import process_end

SCRIPT = """
import sys
from harness.commands.process_end import keep_until_exit, leave_unfreed

class Noisy:
    def __del__(self):
        sys.stdout.write("freed\\n")
        sys.stdout.flush()

def command():
    kept = Noisy()
    if {keep}:
        keep_until_exit(kept)

command()
sys.stdout.write("command done\\n")
leave_unfreed()
"""


def _run(keep: bool) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(keep=keep)], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


def test_what_a_command_keeps_is_not_freed_when_the_process_ends():
    assert _run(keep=True) == ["command", "done"]


def test_what_it_does_not_keep_is_freed_when_the_command_returns():
    assert _run(keep=False) == ["freed", "command", "done"]


def test_a_process_running_many_commands_keeps_only_the_last_ones_objects():
    first, second = object(), object()
    try:
        process_end.keep_until_exit(first)
        process_end.keep_until_exit(second)
        assert process_end._KEPT == [second]
    finally:
        process_end.keep_until_exit()
