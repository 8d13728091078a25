"""`faultline COMMAND` imports only that command's module: each module must
register the command its name says, or that command would not be found."""

import subprocess
import sys

import pytest

from harness.cli import COMMAND_MODULES, _command_name, build_parser


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_module_registers_the_command_its_name_says(module: str) -> None:
    name = _command_name(module)
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
