"""Check for fix-shell-script: `sh backup.sh` copies exactly the .txt files of data/ and counts them.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The check
starts from an empty backup/ and adds a fourth .txt file the task never mentioned, so a script
that just echoes "backed up 3 files" fails.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.rmtree(workspace / "backup", ignore_errors=True)
(workspace / "data" / "extra.txt").write_text("added by the check\n")
wanted = sorted(p.name for p in (workspace / "data").glob("*.txt"))

run = subprocess.run(["sh", "backup.sh"], cwd=workspace, capture_output=True, text=True, timeout=20)
if run.returncode != 0 or run.stdout != f"backed up {len(wanted)} files\n" or run.stderr:
    sys.exit(f"`sh backup.sh` exited {run.returncode}, printed {run.stdout[-200:]!r} {run.stderr[-200:]!r}; "
             f"expected 'backed up {len(wanted)} files'")
copied = sorted(p.name for p in (workspace / "backup").iterdir())
if copied != wanted or any((workspace / "backup" / n).read_bytes() != (workspace / "data" / n).read_bytes()
                           for n in wanted):
    sys.exit(f"backup/ holds {copied}, expected copies of {wanted}")
