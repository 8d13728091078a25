"""`faultline check` as Spark jobs (`check_job`, `split_job`) and the session they run in."""

# A run with at least this many history events has its Elle cycle search and
# divergence check split across executors (`split_job`, `faultline check
# --split-from`); a smaller run is one task. None: no run is split unless the
# check asks, because on the 2-core machine measured (docs/spark.md, "One big
# history") splitting made every big check slower, on one worker or two.
# Here, not in split_job, so the CLI can name it without importing pandas.
SPLIT_FROM: int | None = None
