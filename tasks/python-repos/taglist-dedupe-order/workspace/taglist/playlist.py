from .tracks import title
from .unique import unique


class Playlist:
    def __init__(self):
        self._queued = []

    def queue(self, *track_ids):
        self._queued.extend(track_ids)

    def order(self):
        """Track ids in the order first queued, each once."""
        return unique(self._queued)

    def titles(self):
        return [title(track) for track in self.order()]
