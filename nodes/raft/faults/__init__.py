"""The raft store's own faults: triggers that fire on its event lines
(nodes.raft.events: `vote`, `ack`, `role`), and the faults aimed at what only
it keeps (its quorum-state file: `lose-state`; its cluster id: `reformat`).
They reach the generic registry as a plug-in's do, through the
`faultline.faults` entry point (pyproject.toml ->
nodes.raft.faults.registered); nothing in the core imports them."""
