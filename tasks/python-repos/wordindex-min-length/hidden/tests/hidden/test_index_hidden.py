from wordindex import Index


def test_short_words_not_indexed():
    index = Index()
    index.add(1, "Go to an API of my app")
    assert index.vocabulary() == ["api", "app"]


def test_stopwords_not_indexed():
    index = Index()
    index.add(1, "the cat and the hat")
    assert index.vocabulary() == ["cat", "hat"]


def test_case_folded():
    index = Index()
    index.add(7, "KAFKA Streams")
    assert index.search("kafka streams") == {7}
