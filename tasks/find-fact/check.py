"""Check for find-fact: the final answer names req-7309, the request on the log's only ERROR line.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The line
is past the first 12,000 bytes, so a single read_file does not show it. An answer that lists other
request ids from the log does not count: pasting the whole log is not finding the fact.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
log_ids = set(re.findall(r"req-\d+", (Path(__file__).parent / "files" / "server.log").read_text()))
named = set(re.findall(r"req-\d+", answer)) & log_ids
if named != {"req-7309"}:
    sys.exit(f"the answer names {sorted(named) or 'no request id from the log'}; expected just req-7309")
