"""Shapes on a floor plan."""


def rectangle_area(width, height):
    return width * height


def calc_perimeter(width, height):
    return 2 * (width + height)
