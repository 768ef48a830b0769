"""Check for shell-quoting: `sh fix_ext.sh` renames every photos/*.JPG to .jpg, spaces and all.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. photos/
is put back from files/ (the agent's own tries have renamed some) and gets names the task never
showed: two spaces in a row, a leading dash, ".JPG" in the middle of a name; every file must keep
its bytes.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
photos = workspace / "photos"
shutil.rmtree(photos, ignore_errors=True)
shutil.copytree(Path(__file__).parent / "files" / "photos", photos)
for name in ("two  spaces.JPG", "-dash.JPG", "a.JPG.copy.JPG"):
    (photos / name).write_text(f"image data of {name}\n")
before = {p.name: p.read_bytes() for p in photos.iterdir()}
expected = {(n[:-4] + ".jpg" if n.endswith(".JPG") else n): data for n, data in before.items()}
renamed = sum(n.endswith(".JPG") for n in before)

run = subprocess.run(["sh", "fix_ext.sh"], cwd=workspace, capture_output=True, text=True, timeout=20)
if run.returncode != 0 or run.stdout != f"renamed {renamed} files\n":
    sys.exit(f"`sh fix_ext.sh` exited {run.returncode} and printed {run.stdout[-200:]!r} {run.stderr[-200:]!r}; "
             f"expected 'renamed {renamed} files'")
after = {p.name: p.read_bytes() for p in photos.iterdir()}
if after != expected:
    sys.exit(f"photos/ holds {sorted(after)}; expected {sorted(expected)} with their contents unchanged")
