"""Check for temp-converter: convert.py converts both ways, to one decimal, and rejects other units.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Values
beyond the two in the prompt are tried (negative, fractional, -40), so printing the examples
does not pass.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
CASES = [("100", "C", "212.0 F"), ("32", "F", "0.0 C"), ("-40", "C", "-40.0 F"), ("98.6", "F", "37.0 C"),
         ("21.5", "C", "70.7 F"), ("10", "F", "-12.2 C"), ("0", "C", "32.0 F")]


def convert(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "convert.py", *args], cwd=workspace, capture_output=True, text=True,
                          timeout=20)


for value, unit, expected in CASES:
    run = convert(value, unit)
    if run.returncode != 0 or run.stdout.strip() != expected:
        sys.exit(f"`python convert.py {value} {unit}` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
bad = convert("20", "K")
if bad.returncode != 1 or not bad.stderr.strip() or bad.stdout.strip():
    sys.exit(f"`python convert.py 20 K` exited {bad.returncode}, printed {bad.stdout[:100]!r} to stdout and "
             f"{bad.stderr[-100:]!r} to stderr; expected exit 1 and a message on stderr only")
