"""Check for large-ledger-sum: balance.txt holds 319587.36, deposits minus withdrawals and fees over
the 5,000 lines of ledger.txt.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The file is
far bigger than one read_file, so a total from the part that was read is a different number;
forgetting the fees gives 322036.94.
"""

import sys
from pathlib import Path

path = Path(sys.argv[1]) / "balance.txt"
written = path.read_text(errors="replace").strip() if path.is_file() else None
if written != "319587.36":
    sys.exit(f"balance.txt holds {written!r}; expected '319587.36'")
