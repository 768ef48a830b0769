"""Counting words."""


def count_words(text):
    """Number of words in text; words are separated by any whitespace: count_words("a  b\\nc") == 3."""
    return len(text.split())
