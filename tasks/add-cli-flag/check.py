"""Check for add-cli-flag: greet.py has a working --shout flag and still greets normally without it.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Names and
flag orders the task does not mention are tried too, so hard-coding "HELLO, ADA!" fails.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
CASES = [
    (["--name", "Ada", "--shout"], "HELLO, ADA!\n"),
    (["--name", "Ada"], "Hello, Ada!\n"),
    (["--shout", "--name", "Grace Hopper"], "HELLO, GRACE HOPPER!\n"),
    (["--shout"], "HELLO, WORLD!\n"),
    ([], "Hello, world!\n"),
]
for args, expected in CASES:
    run = subprocess.run([sys.executable, "greet.py", *args], cwd=workspace, capture_output=True, text=True, timeout=20)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python greet.py {' '.join(args)}` exited {run.returncode} and printed {run.stdout!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
