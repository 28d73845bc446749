from dataclasses import dataclass


@dataclass(frozen=True)
class Player:
    name: str
    score: int
