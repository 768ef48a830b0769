#!/usr/bin/env python3
"""docs/issue55/summary.py OUT/LABEL: one TSV line a task of a `scripts/suite.py` run, on stdout.

Columns: task, solved (the suite's strict check), exit code, seconds, turns, generated tokens,
attempts started, attempts whose checks saw no change of theirs (the attempt wrote nothing), and
the attempt whose check passed ("-" if none; "no check" for a task run without one). Read from
each task's result.json and transcript.jsonl (the `attempt` notes and the `check` events' `seen`
and `left_out`). A task without a result.json (still running, or killed) is left out.
"""

import json
import sys
from pathlib import Path


def row(task: Path) -> str | None:
    if not (task / "result.json").is_file():
        return None
    result = json.loads((task / "result.json").read_text())
    events = [json.loads(line) for line in open(task / "transcript.jsonl")] if (task / "transcript.jsonl").is_file() else []
    started = {e["n"] for e in events if e["event"] == "note" and e.get("kind") == "attempt"}
    checks = [e for e in events if e["event"] == "check"]
    changed = {e.get("attempt") for e in checks if e.get("seen") or e.get("left_out")}
    empty = {e.get("attempt") for e in checks} - changed
    passed = next((str(e.get("attempt", 1)) for e in checks if e["passed"]), "-") if checks else "no check"
    tokens = (result.get("tokens") or {}).get("completion", "?")
    return "\t".join(map(str, (result["task"], "yes" if result["solved"] else "no", result["exit"], result["seconds"],
                               result.get("turns", "?"), tokens, len(started) or (1 if checks else 0), len(empty), passed)))


if __name__ == "__main__":
    print("task\tsolved\texit\tseconds\tturns\tgenerated_tokens\tattempts\tattempts_wrote_nothing\tpassed_at")
    for folder in sorted(Path(sys.argv[1]).iterdir()):
        if folder.is_dir() and (line := row(folder)):
            print(line)
