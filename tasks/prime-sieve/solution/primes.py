"""Print the primes below N on one line: `python primes.py 10` -> `2 3 5 7`."""

import sys

n = int(sys.argv[1])
sieve = [True] * max(n, 2)
sieve[0] = sieve[1] = False
for i in range(2, int(n ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i::i] = [False] * len(sieve[i * i::i])
print(" ".join(str(i) for i in range(n) if sieve[i]))
