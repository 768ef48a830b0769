"""Check for missing-return: textclean.normalize returns the tidied name, so badges.py prints badges.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. badges.py
is put back from files/ first (guarding against None there hides the bug rather than fixing
it), and normalize is called on names that badges.py does not use.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
shutil.copy(Path(__file__).parent / "files" / "badges.py", workspace / "badges.py")
EXPECTED = ("[    Ada Lovelace    ] A.L.\n[    Grace Hopper    ] G.H.\n[    Alan Turing     ] A.T.\n"
            "[ Katherine Johnson  ] K.J.\n")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


run = python("badges.py")
if run.returncode != 0 or run.stdout != EXPECTED:
    sys.exit(f"the original `python badges.py` exited {run.returncode} and printed {run.stdout[:200]!r} "
             f"{run.stderr[-200:]!r}")
hidden = python("-c", "from textclean import normalize, initials\n"
                      "assert normalize('  MARIE\\tcurie  ') == 'Marie Curie', normalize('  MARIE\\tcurie  ')\n"
                      "assert normalize('x') == 'X' and normalize('') == ''\n"
                      "assert initials('Marie Curie') == 'M.C.'")
if hidden.returncode != 0:
    sys.exit(f"textclean.normalize is wrong beyond badges.py: {hidden.stderr[-300:]!r}")
