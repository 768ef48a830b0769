from textclean import initials, normalize

ATTENDEES = ["  ada   LOVELACE ", "grace hopper", "ALAN  turing", "katherine johnson"]

for raw in ATTENDEES:
    name = normalize(raw)
    print(f"[{name.center(20)}] {initials(name)}")
