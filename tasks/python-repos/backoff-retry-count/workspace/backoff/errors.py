class Transient(Exception):
    """A failure worth retrying."""


class GaveUp(Exception):
    def __init__(self, attempts, last):
        super().__init__(f"gave up after {attempts} attempts: {last}")
        self.attempts = attempts
        self.last = last
