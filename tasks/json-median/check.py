"""Check for json-median: the final answer gives 80250, the median Engineering salary in staff.json.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The
department has an even number of people, so the median is the mean of the two middle salaries
and is no salary in the file; the mean (78291.67) and the median of everyone (64250) are other
numbers. "80,250" and "80250.00" count too.
"""

import re
import sys
from pathlib import Path

answer = Path(sys.argv[2]).read_text(errors="replace")
numbers = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", answer)}
if 80250 not in numbers:
    sys.exit(f"the answer does not give 80250: {answer.strip()[-200:]!r}")
if len(answer) > 2000:
    sys.exit("the answer is longer than 2,000 characters: a number buried in a dump is not an answer")
