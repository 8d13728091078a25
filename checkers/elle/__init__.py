"""Elle-style checker for list-append transaction histories: infers each key's
version order from reads, builds a ww/wr/rw/process/realtime dependency graph,
finds and explains cycles (G0, G1c, G-single-item, G-nonadjacent-item,
G2-item and their process and realtime variants) and non-cycle anomalies
(G1a, G1b, dirty update, lost update, future read, internal, duplicate
elements, incompatible order), and says which models of Elle's lattice
(`checkers.elle.consistency`) the history rules out. `checkers.elle.rw_register` judges register
transactions with the same graph, search and models."""

from checkers.elle.check import check
from checkers.elle.consistency import MODELS

__all__ = ["check", "MODELS"]
