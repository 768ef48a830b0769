from duration import parse_duration

assert parse_duration("45s") == 45
assert parse_duration("2h") == 7200
assert parse_duration("1h30m") == 5400
assert parse_duration("90m") == 5400
assert parse_duration("2h5m10s") == 7510
assert parse_duration("0s") == 0

for bad in ["", "12", "5x", "1h1h", "30m2h", "h"]:
    try:
        parse_duration(bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"parse_duration({bad!r}) should raise ValueError")

print("all tests passed")
