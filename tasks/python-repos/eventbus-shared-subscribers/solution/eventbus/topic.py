class Topic:
    """A named channel; every subscriber gets each published message, in subscription order."""

    def __init__(self, name, subscribers=None):
        self.name = name
        self.subscribers = list(subscribers) if subscribers is not None else []

    def subscribe(self, handler):
        self.subscribers.append(handler)

    def publish(self, message):
        for handler in list(self.subscribers):
            handler(message)
        return len(self.subscribers)
