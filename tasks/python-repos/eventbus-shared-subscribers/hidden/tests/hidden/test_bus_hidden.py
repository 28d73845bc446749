from eventbus import Bus, Topic


def test_topics_do_not_share_subscribers():
    bus = Bus()
    created, paid = [], []
    bus.subscribe("orders.created", created.append)
    bus.subscribe("orders.paid", paid.append)
    assert bus.publish("orders.paid", "p1") == 1
    assert created == [] and paid == ["p1"]


def test_fresh_topic_has_no_subscribers():
    Topic("x").subscribe(print)
    assert Topic("y").subscribers == []


def test_two_buses_are_independent():
    first, second = Bus(), Bus()
    first.subscribe("a", lambda m: None)
    assert second.topic("a").publish("m") == 0


def test_wildcard_publish_reaches_matching_topics():
    bus = Bus()
    seen = []
    bus.subscribe("orders.created", lambda m: seen.append("created"))
    bus.subscribe("users.created", lambda m: seen.append("user"))
    bus.publish("orders.*", None)
    assert "created" in seen
