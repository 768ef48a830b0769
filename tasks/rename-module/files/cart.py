from helpers import fmt_money

PRICES = {"tea": 4.5, "mug": 12.0, "honey": 7.25}


def cart_total(items):
    return sum(PRICES[name] * count for name, count in items.items())


def describe(items):
    return [f"{count} x {name}: {fmt_money(PRICES[name] * count)}" for name, count in items.items()]
