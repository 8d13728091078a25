"""`faultline COMMAND` imports only that command's module: each module must
register the command its name says, or that command would not be found."""

import subprocess
import sys

import pytest

from harness.cli import COMMANDS, build_parser


@pytest.mark.parametrize("name", COMMANDS)
def test_module_registers_the_command_its_name_says(name: str) -> None:
    parser = build_parser(name)
    with pytest.raises(SystemExit) as e:
        parser.parse_args([name, "--help"])
    assert e.value.code == 0


def test_check_elle_does_not_import_the_cluster_code() -> None:
    code = ("import sys\nfrom harness.cli import main\n"
            "main(['check-elle', '--help'])\n"
            "print('harness.run.cluster' in sys.modules, 'pyroute2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


def _check_elle_imports(tmp_path, edn: str) -> list[str]:
    path = tmp_path / "h.edn"
    path.write_text(edn)
    code = ("import sys, io, contextlib\nfrom harness.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    code = main(['check-elle', {str(path)!r}])\n"
            "print(code, *(m in sys.modules for m in ('numpy', 'scipy', 'networkx')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return out.split()


# VALID: one append, read back. CYCLIC: two txns, each reading the other's
# append (a G1c cycle, whose explanation needs the graph of record).
VALID = ('{:type :invoke, :value [[:append :x 1]], :process 0}\n'
         '{:type :ok, :value [[:append :x 1]], :process 0}\n'
         '{:type :invoke, :value [[:r :x nil]], :process 1}\n'
         '{:type :ok, :value [[:r :x [1]]], :process 1}\n')
CYCLIC = ('{:type :invoke, :value [[:r :x nil] [:append :y 1]], :process 0}\n'
          '{:type :invoke, :value [[:r :y nil] [:append :x 1]], :process 1}\n'
          '{:type :ok, :value [[:r :x [1]] [:append :y 1]], :process 0}\n'
          '{:type :ok, :value [[:r :y [1]] [:append :x 1]], :process 1}\n')


def test_check_elle_of_a_small_history_imports_neither_numpy_nor_scipy(tmp_path) -> None:
    # A history of fewer than 15k txns is judged in pure Python, and networkx
    # (the graph of record) is imported only when a cycle needs explaining.
    assert _check_elle_imports(tmp_path, VALID) == ["0", "False", "False", "False"]
    assert _check_elle_imports(tmp_path, CYCLIC) == ["1", "False", "False", "True"]


def test_only_the_program_freezes_the_collector(monkeypatch, capsys) -> None:
    import gc

    from harness.cli import main

    gc.unfreeze()
    assert main(["check-elle", "--help"]) == 0
    assert gc.get_freeze_count() == 0  # a caller in-process keeps its collector
    monkeypatch.setattr(sys, "argv", ["faultline", "check-elle", "--help"])
    try:
        assert main() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_check_elle_of_a_list_append_history_imports_no_registry(tmp_path) -> None:
    # The workload and checker registries are read only for a named --workload
    # (or help): judging the default needs neither. Nor does an EDN history
    # need the Porcupine log reader.
    path = tmp_path / "h.edn"
    path.write_text(CYCLIC)
    mods = ("checkers.registry", "workloads.registry", "checkers.formats.porcupine")

    def imported(*args: str) -> list[str]:
        code = ("import sys, io, contextlib\nfrom harness.cli import main\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                f"    code = main(['check-elle', *{list(args)!r}, {str(path)!r}])\n"
                f"print(code, *(m in sys.modules for m in {mods!r}))")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout.split()

    assert imported() == ["1", "False", "False", "False"]
    assert imported("--workload", "list-append") == ["1", "True", "True", "False"]


def test_check_elle_workload_choices_come_from_the_registry(capsys) -> None:
    from harness.cli import main
    from harness.commands.check_elle import txn_workloads
    from workloads.registry import WORKLOADS

    assert main(["check-elle", "--help"]) == 0
    out = capsys.readouterr().out
    assert set(txn_workloads()) <= set(WORKLOADS) and "rw-register" in txn_workloads()
    assert "{" + ",".join(txn_workloads()) + "}" in out
    assert main(["check-elle", "--workload", "no-such-workload", "h.edn"]) == 254
