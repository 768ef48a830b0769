"""Parsing the dates found in orders."""

from datetime import date


def parse_date(text):
    """Dates come as ISO '2024-03-02' or European '02/03/2024'; return a datetime.date."""
    if "/" in text:
        day, month, year = text.split("/")
    else:
        year, month, day = text.split("-")
    return date(int(year), int(month), int(day))
