"""One line about a room."""

from geometry import rectangle_area, calc_perimeter


def describe(name, width, height):
    return f"{name}: {rectangle_area(width, height)} m2, {calc_perimeter(width, height)} m of wall"
