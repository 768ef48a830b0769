"""Check for csv-max-group: wettest.txt names Birchwood, the station with the most rain in March.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The wrong
turns name other stations: Cedar Point has the most rain over both months, Dunmore the wettest
single day of March.
"""

import sys
from pathlib import Path

path = Path(sys.argv[1]) / "wettest.txt"
written = path.read_text(errors="replace").strip() if path.is_file() else None
if written != "Birchwood":
    sys.exit(f"wettest.txt holds {written!r}; expected 'Birchwood'")
