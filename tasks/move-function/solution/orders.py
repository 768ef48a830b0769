"""Orders as (id, date text, amount) and a few queries over them."""

from dates import parse_date

ORDERS = [("A-17", "2024-03-02", 120.0), ("A-18", "02/03/2024", 80.5), ("A-19", "2024-03-15", 42.25),
          ("A-20", "28/03/2024", 310.0), ("A-21", "2024-04-01", 15.0)]


def orders_in_month(year, month):
    return [o for o in ORDERS if parse_date(o[1]).year == year and parse_date(o[1]).month == month]


if __name__ == "__main__":
    for order_id, when, amount in orders_in_month(2024, 3):
        print(order_id, parse_date(when).isoformat(), amount)
