"""Dependency edge kinds, as bits so one edge can carry several reasons."""

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
DATA = WW | WR | RW
ALL = DATA | PROCESS | REALTIME
KIND_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}
