"""Check for argparse-ignore-case: search.py matches case-insensitively with -i or --ignore-case,
wherever the flag stands, prints the lines unchanged, and is case-sensitive without it.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. It searches
a file the agent never saw, with patterns in mixed case.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
LINES = ["The Cat sat", "no match here", "CATALOGUE of things", "concatenate", "dog", "cAt"]
(workspace / "animals.txt").write_text("\n".join(LINES) + "\n")


def matches(pattern: str, fold: bool) -> str:
    return "".join(f"{n}: {line}\n" for n, line in enumerate(LINES, 1)
                   if (pattern.lower() in line.lower() if fold else pattern in line))


for args, pattern, fold in (["cat", "animals.txt"], "cat", False), (["-i", "cat", "animals.txt"], "cat", True), \
        (["CaT", "animals.txt", "--ignore-case"], "CaT", True), (["--ignore-case", "DOG", "animals.txt"], "DOG", True), \
        (["Cat", "animals.txt"], "Cat", False), (["-i", "zebra", "animals.txt"], "zebra", True):
    run = subprocess.run([sys.executable, "search.py", *args], cwd=workspace, capture_output=True, text=True, timeout=20)
    expected = matches(pattern, fold)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python search.py {' '.join(args)}` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
