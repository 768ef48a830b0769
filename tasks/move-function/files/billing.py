"""Print the March invoice total and the date of the first order."""

from orders import ORDERS, orders_in_month, parse_date

march = orders_in_month(2024, 3)
print(f"March: {len(march)} orders, {sum(o[2] for o in march):.2f} in total")
print("first order:", min(parse_date(o[1]) for o in ORDERS).isoformat())
