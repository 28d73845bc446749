STOPWORDS = frozenset({"the", "and", "for", "with", "that", "this"})


def drop_stopwords(words):
    return [word for word in words if word not in STOPWORDS]
