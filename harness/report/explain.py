"""JSON shown compactly in the report (stats, values of ops). An anomaly's
sentence is `checkers.anomaly_text.sentence`, the one the gate and the
campaign summary use too."""

from __future__ import annotations

import json
from typing import Any

VALUE_CHARS = 120


def compact(x: Any, limit: int = VALUE_CHARS) -> str:
    try:
        s = json.dumps(x, default=repr, sort_keys=True)
    except (ValueError, RecursionError):
        s = repr(x)
    return s if len(s) <= limit else s[:limit - 1] + "…"
