"""Closed intervals [start, end]."""
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Interval:
    start: int
    end: int

    def __post_init__(self):
        if self.end < self.start:
            raise ValueError("end before start")
