from stats import mean, median

assert mean([1, 2, 3, 4]) == 2.5
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5, f"median([4, 1, 3, 2]) returned {median([4, 1, 3, 2])}, expected 2.5"
assert median([10, 20]) == 15
print("all tests passed")
