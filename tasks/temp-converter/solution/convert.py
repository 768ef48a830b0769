"""Convert a temperature between Celsius and Fahrenheit: `python convert.py 100 C` -> `212.0 F`."""

import sys

value, unit = float(sys.argv[1]), sys.argv[2]
if unit == "C":
    print(f"{value * 9 / 5 + 32:.1f} F")
elif unit == "F":
    print(f"{(value - 32) * 5 / 9:.1f} C")
else:
    sys.exit(f"unknown unit {unit!r}: use C or F")
