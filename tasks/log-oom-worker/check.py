"""Check for log-oom-worker: the final answer names job J48151 and worker-23, from the log's only
OutOfMemoryError line, and no other job or worker.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The line
is line 2,214 of 3,000, and the log has near-misses (memory warnings, timeout errors), so an
answer that lists several candidates or pastes the log does not count.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
log = (Path(__file__).parent / "files" / "jobs.log").read_text()
for pattern, expected in ((r"\bJ\d{5}\b", "J48151"), (r"\bworker-\d+\b", "worker-23")):
    named = set(re.findall(pattern, answer)) & set(re.findall(pattern, log))
    if named != {expected}:
        sys.exit(f"the answer names {sorted(named)[:6] or 'none'}; expected just {expected}")
