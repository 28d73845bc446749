from collections import defaultdict

from .stopwords import drop_stopwords
from .tokens import split_words

# Words shorter than this are noise in a search index.
MIN_WORD = 3


class Index:
    def __init__(self):
        self._postings = defaultdict(set)

    def add(self, doc_id, text):
        for word in drop_stopwords(split_words(text, MIN_WORD)):
            self._postings[word].add(doc_id)

    def search(self, query):
        words = drop_stopwords(split_words(query))
        if not words:
            return set()
        found = [self._postings.get(word, set()) for word in words]
        return set.intersection(*found)

    def vocabulary(self):
        return sorted(self._postings)
