from .topic import Topic
from .wildcard import matches


class Bus:
    def __init__(self):
        self._topics = {}

    def topic(self, name):
        if name not in self._topics:
            self._topics[name] = Topic(name)
        return self._topics[name]

    def subscribe(self, name, handler):
        self.topic(name).subscribe(handler)

    def publish(self, pattern, message):
        """Publishes to every existing topic the pattern matches; returns how many handlers ran."""
        return sum(topic.publish(message) for name, topic in sorted(self._topics.items()) if matches(pattern, name))
