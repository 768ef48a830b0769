"""Check for json-nested-count: the final answer gives 61, the shipped units of SKU BK-204.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The wrong
turns give other numbers: 87 counting cancelled orders too, 174 when BK-2040 is matched as well
(a plain grep), 13 counting order lines instead of units.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
numbers = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", answer)}
if 61 not in numbers:
    sys.exit(f"the answer does not give 61: {answer.strip()[-200:]!r}")
if len(answer) > 2000:
    sys.exit("the answer is longer than 2,000 characters: a number buried in a dump is not an answer")
