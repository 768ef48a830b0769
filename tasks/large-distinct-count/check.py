"""Check for large-distinct-count: the final answer gives 37, the number of distinct email domains
in the 5,200 rows of contacts.csv.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Counting
only what one read_file shows gives fewer; sub-domains such as mail.example.org are domains of
their own.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
if 37 not in {float(n.replace(",", "")) for n in re.findall(r"(?<![\w.@])\d[\d,]*(?:\.\d+)?", answer)}:
    sys.exit(f"the answer does not give 37: {answer.strip()[-200:]!r}")
if len(answer) > 2000:
    sys.exit("the answer is longer than 2,000 characters: a number buried in a dump is not an answer")
