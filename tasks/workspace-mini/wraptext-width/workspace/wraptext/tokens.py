"""Splitting text into words."""


def words(text):
    return [word for word in text.split() if word]
