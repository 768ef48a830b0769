"""Formatting functions shared by the shop scripts."""


def fmt_money(amount):
    return f"${amount:,.2f}"


def fmt_percent(fraction):
    return f"{fraction * 100:.1f}%"
