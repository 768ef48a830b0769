"""Orders as (id, date text, amount) and a few queries over them."""

from datetime import date

ORDERS = [("A-17", "2024-03-02", 120.0), ("A-18", "02/03/2024", 80.5), ("A-19", "2024-03-15", 42.25),
          ("A-20", "28/03/2024", 310.0), ("A-21", "2024-04-01", 15.0)]


def parse_date(text):
    """Dates come as ISO '2024-03-02' or European '02/03/2024'; return a datetime.date."""
    if "/" in text:
        day, month, year = text.split("/")
    else:
        year, month, day = text.split("-")
    return date(int(year), int(month), int(day))


def orders_in_month(year, month):
    return [o for o in ORDERS if parse_date(o[1]).year == year and parse_date(o[1]).month == month]


if __name__ == "__main__":
    for order_id, when, amount in orders_in_month(2024, 3):
        print(order_id, parse_date(when).isoformat(), amount)
