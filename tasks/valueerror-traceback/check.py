"""Check for valueerror-traceback: timesheet.py reads fractional hours and adds them up exactly.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Besides
hours.txt (put back from files/), it runs on a timesheet it has never seen whose quarters and
halves would be lost by `int(float(hours))`, so truncating is not a fix.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
(workspace / "hours.txt").write_bytes((Path(__file__).parent / "files" / "hours.txt").read_bytes())
(workspace / "other_week.txt").write_text("2024-04-01 8\n2024-04-02 6.25\n\n2024-04-03 7.75\n2024-04-04 0.5\n")

for sheet, expected in (("hours.txt", "days: 5\ntotal: 38.50 h\n"), ("other_week.txt", "days: 4\ntotal: 22.50 h\n")):
    run = subprocess.run([sys.executable, "timesheet.py", sheet], cwd=workspace, capture_output=True, text=True,
                         timeout=20)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python timesheet.py {sheet}` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
