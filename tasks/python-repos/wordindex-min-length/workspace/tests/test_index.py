from wordindex import Index
from wordindex.tokens import split_words


def test_search_intersects():
    index = Index()
    index.add(1, "Fast parsers for Python")
    index.add(2, "Python packaging")
    assert index.search("python") == {1, 2}
    assert index.search("python parsers") == {1}


def test_split_words():
    assert split_words("It's A test", lower=False) == ["It's", "A", "test"]
    assert split_words("a bb ccc", min_len=2) == ["bb", "ccc"]
