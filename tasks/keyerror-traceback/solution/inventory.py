import json


def load(path):
    with open(path) as f:
        return json.load(f)


def stock_value(items):
    return sum(item["quantity"] * item["unit_price"] for item in items)


def main():
    items = load("stock.json")
    print(f"{len(items)} products")
    print(f"stock value: {stock_value(items):.2f}")


main()
