"""Check for csv-total: north_total.txt holds 3596.41, the sum of the North rows of sales.csv.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The
number must be exact to the cent (written with two decimals, as the task asks).
"""

import sys
from pathlib import Path

total = Path(sys.argv[1]) / "north_total.txt"
written = total.read_text(errors="replace").strip() if total.is_file() else None
if written != "3596.41":
    sys.exit(f"north_total.txt holds {written!r}; expected '3596.41'")
