"""One test run: its config and seeds, the cluster, client workers, the history
recorder, the lifecycle in phases, run state, crash-safe resources, replay."""
