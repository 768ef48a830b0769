"""Check for write-unit-test: test_wordcount.py passes on the real count_words and fails on
three broken ones (mutation testing), so a test that asserts nothing useful does not count.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. Each
mutant is a bug the three cases named in the task would catch.
"""

import shutil
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
original = (Path(__file__).parent / "files" / "wordcount.py").read_text()
MUTANTS = {
    "always 0": "return 0",
    "one too many": "return len(text.split()) + 1",
    "splits on single spaces only": 'return len(text.split(" "))',
}


def run_test(source: str) -> subprocess.CompletedProcess:
    (workspace / "wordcount.py").write_text(source)
    shutil.rmtree(workspace / "__pycache__", ignore_errors=True)  # never run a stale compiled copy
    return subprocess.run([sys.executable, "test_wordcount.py"], cwd=workspace, capture_output=True, text=True,
                          timeout=20)


if not (workspace / "test_wordcount.py").is_file():
    sys.exit("test_wordcount.py does not exist")
run = run_test(original)
if run.returncode != 0 or run.stdout.strip().splitlines()[-1:] != ["ok"]:
    sys.exit(f"`python test_wordcount.py` exited {run.returncode} and printed {run.stdout[-100:]!r} "
             f"{run.stderr[-200:]!r} on the real count_words; expected 'ok'")
for name, body in MUTANTS.items():
    if run_test(original.replace("return len(text.split())", body)).returncode == 0:
        sys.exit(f"test_wordcount.py still passes when count_words is broken ({name})")
(workspace / "wordcount.py").write_text(original)
