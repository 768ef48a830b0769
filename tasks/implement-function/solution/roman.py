"""Roman numerals."""

VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(number):
    """Return the Roman numeral for an integer from 1 to 3999, e.g. to_roman(14) == "XIV"."""
    digits = []
    for value, letters in VALUES:
        count, number = divmod(number, value)
        digits.append(letters * count)
    return "".join(digits)
