"""Check for fizzbuzz (create and run a script): `python fizzbuzz.py` prints exactly 1..20 FizzBuzz.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The final
answer is not read: the script's output is the whole result.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
expected = "".join("FizzBuzz\n" if n % 15 == 0 else "Fizz\n" if n % 3 == 0 else "Buzz\n" if n % 5 == 0
                   else f"{n}\n" for n in range(1, 21))
run = subprocess.run([sys.executable, "fizzbuzz.py"], cwd=workspace, capture_output=True, text=True, timeout=20)
if run.returncode != 0 or run.stdout != expected:
    sys.exit(f"`python fizzbuzz.py` exited {run.returncode} and printed {run.stdout[:120]!r} "
             f"{run.stderr[-200:]!r}; expected FizzBuzz for 1..20")
