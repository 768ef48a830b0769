"""Check for duration-parse: the original test_duration.py passes, and so do durations it does not show.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The test
file is put back from files/ first, so editing it does not count.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.copy(Path(__file__).parent / "files" / "test_duration.py", workspace / "test_duration.py")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("test_duration.py")
if run.returncode != 0 or run.stdout != "all tests passed\n":
    sys.exit(f"the original `python test_duration.py` exited {run.returncode}: {run.stderr[-300:]!r}")
hidden = python("-c", """
from duration import parse_duration
for text, seconds in [("10m5s", 605), ("3h0s", 10800), ("100s", 100), ("0h1s", 1), ("1h1m1s", 3661), ("25h", 90000)]:
    assert parse_duration(text) == seconds and type(parse_duration(text)) is int, f"parse_duration({text!r}) returned {parse_duration(text)!r}, expected {seconds}"
for bad in ["abc", "m", "1s1m", "1.5h", "-1h", "1h 30m"]:
    try:
        parse_duration(bad)
    except ValueError:
        continue
    raise AssertionError(f"parse_duration({bad!r}) did not raise ValueError")
""")
if hidden.returncode != 0:
    sys.exit(f"parse_duration is wrong beyond the tests: {hidden.stderr.strip().splitlines()[-1][:300]!r}")
