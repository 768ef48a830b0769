"""Roman numerals."""


def to_roman(number):
    """Return the Roman numeral for an integer from 1 to 3999, e.g. to_roman(14) == "XIV"."""
    raise NotImplementedError
