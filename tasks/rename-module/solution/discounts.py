import formatting


def apply_discount(total, fraction):
    saved = total * fraction
    return total - saved, f"you save {formatting.fmt_money(saved)} ({formatting.fmt_percent(fraction)})"
