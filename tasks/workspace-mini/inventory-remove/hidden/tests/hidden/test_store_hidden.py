import pytest

from inventory import Store


def test_remove_several():
    store = Store()
    store.add("pen", 2.0, 5)
    store.remove("pen", 3)
    assert store.items["pen"].quantity == 2


def test_remove_all_drops_the_item():
    store = Store()
    store.add("cup", 4.0, 2)
    store.remove("cup", 2)
    assert "cup" not in list(store.items)


def test_remove_too_many():
    store = Store()
    store.add("cup", 4.0, 1)
    with pytest.raises(KeyError):
        store.remove("cup", 2)
