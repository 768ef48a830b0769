"""Check for fix-bug: the original test_stats.py passes, and so do cases it does not show.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The test
file is put back from files/ first, so editing the test does not count as a fix; the extra cases
catch a median that special-cases the tested inputs.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.copy(Path(__file__).parent / "files" / "test_stats.py", workspace / "test_stats.py")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("test_stats.py")
if run.returncode != 0 or run.stdout != "all tests passed\n":
    sys.exit(f"the original `python test_stats.py` exited {run.returncode}: {run.stderr[-300:]!r}")
hidden = python("-c", "from stats import mean, median\n"
                      "assert median([5, 3, 1, 4, 2, 6]) == 3.5\n"
                      "assert median([7]) == 7 and median([2, 9, 4]) == 4\n"
                      "assert mean([2, 4, 9]) == 5")
if hidden.returncode != 0:
    sys.exit(f"stats.py fails cases beyond the test: {hidden.stderr[-300:]!r}")
