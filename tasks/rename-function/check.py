"""Check for rename-function: `calc_area` is gone from every .py file, `rectangle_area` does the
same job, `calc_perimeter` is untouched, and `python main.py` prints what it printed before.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why.
"""

import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
EXPECTED = ("kitchen: 12 m2, 14 m of wall\nhall: 10 m2, 14 m of wall\noffice: 16 m2, 16 m of wall\n"
            "total: 38 m2\n")

left = [p.name for p in sorted(workspace.rglob("*.py")) if "calc_area" in p.read_text(errors="replace")]
if left:
    sys.exit(f"calc_area is still in {', '.join(left)}")
run = subprocess.run([sys.executable, "main.py"], cwd=workspace, capture_output=True, text=True, timeout=20)
if run.returncode != 0 or run.stdout != EXPECTED:
    sys.exit(f"`python main.py` exited {run.returncode} and printed {run.stdout[:200]!r} {run.stderr[-200:]!r}")
api = subprocess.run([sys.executable, "-c", "import geometry\n"
                      "assert geometry.rectangle_area(3, 5) == 15 and geometry.calc_perimeter(3, 5) == 16"],
                     cwd=workspace, capture_output=True, text=True, timeout=20)
if api.returncode != 0:
    sys.exit(f"geometry.rectangle_area / calc_perimeter are wrong: {api.stderr[-200:]!r}")
