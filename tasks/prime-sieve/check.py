"""Check for prime-sieve: `python primes.py N` prints exactly the primes below N, for several N.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Edge
cases (N of 0, 2 and 3, N itself prime) and a large N are tried; "nothing" may be an empty line.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])


def primes_below(n: int) -> list[int]:
    return [p for p in range(2, n) if all(p % d for d in range(2, int(p ** 0.5) + 1))]


for n in (30, 2, 0, 3, 13, 100, 5000):
    run = subprocess.run([sys.executable, "primes.py", str(n)], cwd=workspace, capture_output=True, text=True,
                         timeout=20)
    expected = " ".join(map(str, primes_below(n)))
    if run.returncode != 0 or run.stdout.strip() != expected or run.stdout.count("\n") > 1:
        sys.exit(f"`python primes.py {n}` exited {run.returncode} and printed {run.stdout[:120]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected[:120]!r}")
