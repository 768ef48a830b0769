"""Check for keyerror-traceback: inventory.py reads the `quantity` key that stock.json really has.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. stock.json
is put back from files/ first (renaming the key in the data is not the fix), then the script runs
on a second stock file it has never seen, so printing 239.10 does not pass.
"""

import json
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
original = (Path(__file__).parent / "files" / "stock.json").read_bytes()
OTHER = [{"name": "rivet", "quantity": 1000, "unit_price": 0.02}, {"name": "clamp", "quantity": 3, "unit_price": 4.5}]


def inventory() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "inventory.py"], cwd=workspace, capture_output=True, text=True, timeout=20)


for data, expected in ((original, "5 products\nstock value: 239.10\n"),
                       (json.dumps(OTHER).encode(), "2 products\nstock value: 33.50\n")):
    (workspace / "stock.json").write_bytes(data)
    run = inventory()
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python inventory.py` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
(workspace / "stock.json").write_bytes(original)
