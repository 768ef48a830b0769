"""Check for log-failed-logins: the final answer names 203.0.113.77, the address with the most
"Failed password" lines in auth.log (41; the runner-up has 36).

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Counting
every line per address instead gives 10.0.4.8 (mostly successful logins). A short ranking of up
to three addresses is accepted; more is a guess, not an answer.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
log_ips = set(re.findall(r"\d+\.\d+\.\d+\.\d+", (Path(__file__).parent / "files" / "auth.log").read_text()))
named = set(re.findall(r"\d+\.\d+\.\d+\.\d+", answer)) & log_ips
if "203.0.113.77" not in named:
    sys.exit(f"the answer does not name 203.0.113.77 (it names {sorted(named)[:5] or 'no address from the log'})")
if len(named) > 3:
    sys.exit(f"the answer names {len(named)} addresses from the log; expected the one with most failures")
