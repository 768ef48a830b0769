"""Check for rle-codec: the original test_rle.py passes, and encode/decode round-trip other strings.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The test
file is put back from files/ first, so editing it does not count; the extra strings (runs longer
than 9, repeats after a gap, many random strings) catch a lookup of the tested cases.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.copy(Path(__file__).parent / "files" / "test_rle.py", workspace / "test_rle.py")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("test_rle.py")
if run.returncode != 0 or not run.stderr.rstrip().endswith("OK"):
    sys.exit(f"the original `python test_rle.py` exited {run.returncode}: {run.stderr[-300:]!r}")
hidden = python("-c", """
import random
from rle import decode, encode
for text, code in [("a" * 12 + "b", "12a1b"), ("abba", "1a2b1a"), ("x", "1x"), ("y" * 100, "100y")]:
    assert encode(text) == code, f"encode({text!r}) returned {encode(text)!r}, expected {code!r}"
    assert decode(code) == text, f"decode({code!r}) returned {decode(code)!r}, expected {text!r}"
rng = random.Random(7)
for _ in range(200):
    text = "".join(rng.choice("ab") * rng.randint(1, 14) for _ in range(rng.randint(0, 6)))
    assert decode(encode(text)) == text, f"decode(encode({text!r})) returned {decode(encode(text))!r}"
""")
if hidden.returncode != 0:
    sys.exit(f"encode/decode are wrong beyond the tests: {hidden.stderr.strip().splitlines()[-1][:300]!r}")
