"""Printing verdicts for people: a table per (run, checker)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

STYLE = {"true": "green", "false": "bold red", "unknown": "yellow"}
WORD = {"true": "valid", "false": "INVALID", "unknown": "unknown"}


def per_run_checker(table: Any) -> list[dict[str, Any]]:
    """Fold per-key rows into one row per (run, checker)."""
    out = []
    for (run, checker), g in table.groupby(["run", "checker"], sort=True):
        vals = set(g["valid"])
        valid = "false" if "false" in vals else "unknown" if "unknown" in vals else "true"
        out.append({"run": run, "checker": checker, "keys": len(g), "valid": valid,
                    "anomalies": int(g["anomaly_count"].sum()),
                    "seconds": float(g["seconds"].sum())})
    return out


def print_verdict_rows(table: Any, file: Any = None) -> None:
    console = Console(file=file or sys.stdout, width=120)
    t = Table(title="verdicts")
    for col in ("run", "checker", "keys", "verdict", "anomalies", "seconds"):
        t.add_column(col, justify="right" if col in ("keys", "anomalies", "seconds") else "left")
    for r in per_run_checker(table):
        t.add_row(r["run"], r["checker"], str(r["keys"]),
                  f"[{STYLE[r['valid']]}]{WORD[r['valid']]}[/]", str(r["anomalies"]),
                  f"{r['seconds']:.2f}")
    console.print(t)
