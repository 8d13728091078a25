"""The raft store's own checkers: rules that judge its event lines
(nodes.raft.events), which no other system writes. They reach the generic
registry as a plug-in's do, through the `faultline.checkers` entry point
(pyproject.toml -> nodes.raft.checkers.registered); nothing in the core
imports them."""
