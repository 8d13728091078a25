"""Campaigns: a TOML matrix of runs, run one after another or K at once, checked, summarised."""
