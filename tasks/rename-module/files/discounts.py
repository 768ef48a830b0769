import helpers


def apply_discount(total, fraction):
    saved = total * fraction
    return total - saved, f"you save {helpers.fmt_money(saved)} ({helpers.fmt_percent(fraction)})"
