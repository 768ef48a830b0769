"""Check for argparse-limit: todo.py has a working --limit N, alone and with --all, and is unchanged
without it.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The check
writes its own todo.json (tasks the agent never saw) and computes what each invocation must
print, so hard-coding the sample's output fails; --limit 0 and a limit above the count are tried.
"""

import json
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
TASKS = [{"title": f"task {letter}", "done": letter in "bef"} for letter in "abcdefgh"]
(workspace / "todo.json").write_text(json.dumps(TASKS))


def listing(show_all: bool, limit: int | None) -> str:
    shown = [t for t in TASKS if show_all or not t["done"]][:limit]
    return "".join(f"[{'x' if t['done'] else ' '}] {t['title']}\n" for t in shown)


for args, show_all, limit in ([], False, None), (["--all"], True, None), (["--limit", "2"], False, 2), \
        (["--all", "--limit", "4"], True, 4), (["--limit", "3", "--all"], True, 3), (["--limit", "0"], False, 0), \
        (["--limit", "50"], False, 50):
    run = subprocess.run([sys.executable, "todo.py", *args], cwd=workspace, capture_output=True, text=True, timeout=20)
    expected = listing(show_all, limit)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python todo.py {' '.join(args)}` exited {run.returncode} and printed {run.stdout[:200]!r} "
                 f"{run.stderr[-200:]!r}; expected {expected!r}")
