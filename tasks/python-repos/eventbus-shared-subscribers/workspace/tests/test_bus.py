from eventbus import Bus
from eventbus.wildcard import matches


def test_one_topic_delivers_in_order():
    bus = Bus()
    seen = []
    bus.subscribe("orders.created", lambda m: seen.append(("a", m)))
    bus.subscribe("orders.created", lambda m: seen.append(("b", m)))
    bus.publish("orders.created", 1)
    assert seen == [("a", 1), ("b", 1)]


def test_wildcards():
    assert matches("orders.*", "orders.created")
    assert not matches("orders.*", "orders.created.eu")
