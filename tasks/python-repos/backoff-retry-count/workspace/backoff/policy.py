from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    retries: int = 3
    base_s: float = 0.1
    factor: float = 2.0
    cap_s: float = 5.0

    def delays(self):
        """The wait before each retry: one per retry, growing by `factor`, capped."""
        return [min(self.cap_s, self.base_s * self.factor**n) for n in range(self.retries)]
