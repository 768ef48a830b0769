"""Check for shell-arithmetic: `sh linecount.sh DIR` prints the real line total of DIR/*.log.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Besides
logs/ (put back from files/), it runs on a folder it has never seen, with a one-line log, a long
one and a .txt that must not count, so echoing 49 does not pass.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.rmtree(workspace / "logs", ignore_errors=True)
shutil.copytree(Path(__file__).parent / "files" / "logs", workspace / "logs")
other = workspace / "other logs"  # a space in the name, as folders have
shutil.rmtree(other, ignore_errors=True)
other.mkdir()
(other / "a.log").write_text("one line\n")
(other / "b.log").write_text("x\n" * 250)
(other / "c.txt").write_text("y\n" * 1000)

for folder, expected in (("logs", 49), ("other logs", 251)):
    run = subprocess.run(["sh", "linecount.sh", folder], cwd=workspace, capture_output=True, text=True, timeout=20)
    if run.returncode != 0 or run.stdout != f"total lines: {expected}\n":
        sys.exit(f"`sh linecount.sh '{folder}'` exited {run.returncode} and printed {run.stdout[-200:]!r} "
                 f"{run.stderr[-200:]!r}; expected 'total lines: {expected}'")
