from inventory import Store


def test_add_and_value():
    store = Store()
    store.add("pen", 2.0, 3)
    assert store.total_value() == 6.0


def test_remove_one():
    store = Store()
    store.add("pen", 2.0, 2)
    store.remove("pen")
    assert store.items["pen"].quantity == 1
