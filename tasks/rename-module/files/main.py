from cart import cart_total, describe
from discounts import apply_discount
from helpers import fmt_money

order = {"tea": 3, "mug": 2, "honey": 1}
for line in describe(order):
    print(line)
total, note = apply_discount(cart_total(order), 0.15)
print(note)
print("to pay:", fmt_money(total))
