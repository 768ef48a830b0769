"""Run-length encoding of strings of letters: "aaabcc" <-> "3a1b2c"."""

import itertools
import re


def encode(text: str) -> str:
    """Each run of one character becomes its length followed by the character: 'aaab' -> '3a1b'."""
    return "".join(f"{len(list(run))}{char}" for char, run in itertools.groupby(text))


def decode(code: str) -> str:
    """The inverse of encode; counts may have several digits: '12x' -> 'xxxxxxxxxxxx'."""
    return "".join(char * int(count) for count, char in re.findall(r"(\d+)(\D)", code))
