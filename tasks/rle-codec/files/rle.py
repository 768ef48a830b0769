"""Run-length encoding of strings of letters: "aaabcc" <-> "3a1b2c"."""


def encode(text: str) -> str:
    """Each run of one character becomes its length followed by the character: 'aaab' -> '3a1b'."""


def decode(code: str) -> str:
    """The inverse of encode; counts may have several digits: '12x' -> 'xxxxxxxxxxxx'."""
