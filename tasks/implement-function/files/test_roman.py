from roman import to_roman

cases = {1: "I", 3: "III", 4: "IV", 9: "IX", 14: "XIV", 40: "XL", 90: "XC", 400: "CD",
         1994: "MCMXCIV", 2024: "MMXXIV", 3999: "MMMCMXCIX"}
for number, expected in cases.items():
    got = to_roman(number)
    assert got == expected, f"to_roman({number}) returned {got!r}, expected {expected!r}"
print("all tests passed")
