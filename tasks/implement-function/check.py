"""Check for implement-function: the original test_roman.py passes, and to_roman is right for
every number from 1 to 3999 (so a lookup table of the tested cases does not pass).

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The test
file is put back from files/ first, so editing the test does not count.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.copy(Path(__file__).parent / "files" / "test_roman.py", workspace / "test_roman.py")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("test_roman.py")
if run.returncode != 0 or run.stdout != "all tests passed\n":
    sys.exit(f"the original `python test_roman.py` exited {run.returncode}: {run.stderr[-300:]!r}")
# A reference written differently from the usual greedy table: digit by digit.
everything = python("-c", """
from roman import to_roman
ones, tens = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"], ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"]
hundreds = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"]
for n in range(1, 4000):
    expected = "M" * (n // 1000) + hundreds[n // 100 % 10] + tens[n // 10 % 10] + ones[n % 10]
    assert to_roman(n) == expected, f"to_roman({n}) returned {to_roman(n)!r}, expected {expected!r}"
""")
if everything.returncode != 0:
    sys.exit(f"to_roman is wrong beyond the test: {everything.stderr[-300:]!r}")
