"""Check for rename-module: formatting.py holds what helpers.py held, nothing imports helpers any
more, and `python main.py` prints what it printed before.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The check
deletes helpers.py itself before running main.py, so a copy that leaves the old imports in place
fails.
"""

import re
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
EXPECTED = "3 x tea: $13.50\n2 x mug: $24.00\n1 x honey: $7.25\nyou save $6.71 (15.0%)\nto pay: $38.04\n"

(workspace / "helpers.py").unlink(missing_ok=True)
left = [p.name for p in sorted(workspace.glob("*.py")) if re.search(r"\bhelpers\b", p.read_text(errors="replace"))]
if left:
    sys.exit(f"`helpers` is still named in {', '.join(left)}")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("main.py")
if run.returncode != 0 or run.stdout != EXPECTED:
    sys.exit(f"`python main.py` without helpers.py exited {run.returncode} and printed {run.stdout[:200]!r} "
             f"{run.stderr[-200:]!r}")
api = python("-c", "import formatting\nassert formatting.fmt_money(1234.5) == '$1,234.50'\n"
                   "assert formatting.fmt_percent(0.5) == '50.0%'")
if api.returncode != 0:
    sys.exit(f"formatting.fmt_money / fmt_percent are missing or wrong: {api.stderr[-200:]!r}")
