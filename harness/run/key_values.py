"""The `KEY=VALUE` options of the command line (`--node-option`,
`--model-option`, ...): each value JSON if it parses, else the text. Its own
module so `faultline check-lin` reads its options without importing what a
run needs (the run command's module brings the fault and workload registries)."""

from __future__ import annotations

from typing import Any

from harness.run.bounds import NonFinite, json_option
from harness.run.errors import UserError


def parse_options(pairs: list[str], what: str) -> dict[str, Any]:
    """`pairs` of `--what KEY=VALUE` as a dict; UserError saying which one
    is not KEY=VALUE or holds a number that is not finite."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UserError(f"{what} {pair!r} must look like KEY=VALUE")
        try:
            out[key] = json_option(raw)
        except NonFinite as e:
            raise UserError(f"{what} {key}: {e} is not a finite number") from None
        except ValueError:
            out[key] = raw
    return out
