"""Check for top-words: topwords.py prints the three most common words of any file it is given.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Besides
poem.txt, the script runs on texts the task never showed: mixed case, punctuation, three-way ties
and a file in a subfolder, so printing the poem's answer does not pass.
"""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

workspace = Path(sys.argv[1])
(workspace / "poem.txt").write_bytes((Path(__file__).parent / "files" / "poem.txt").read_bytes())
(workspace / "more").mkdir(exist_ok=True)
TEXTS = {
    "poem.txt": None,
    "more/fruit.txt": "Apple apple banana.\nCherry, cherry! banana APPLE; date\n",
    "more/ties.txt": "b a c b a c d\ne f g d\n",
    "more/digits.txt": "x1 x2 x3 y-y-y z9z 42 42\n",
}
for name, text in TEXTS.items():
    if text is not None:
        (workspace / name).write_text(text)
    words = re.findall(r"[a-z]+", (workspace / name).read_text().lower())
    expected = "".join(f"{w} {n}\n" for w, n in sorted(Counter(words).items(), key=lambda i: (-i[1], i[0]))[:3])
    run = subprocess.run([sys.executable, "topwords.py", name], cwd=workspace, capture_output=True, text=True,
                         timeout=20)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python topwords.py {name}` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
