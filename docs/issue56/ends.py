#!/usr/bin/env python3
"""docs/issue56/ends.py OUT/LABEL [...]: how a run's attempts ended, summed over its tasks.

Read from each task's transcript.jsonl: the `end` event's `spent` line ("5 attempts in 175 s:
3 failed the check, 1 wrote nothing, 1 passed"), which code since issue 56 writes, and the
attempts cut by the budget (their `out_of_time` notes), by how those ended. One line a run.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path


def ends(run: Path) -> tuple[Counter, Counter]:
    spent, cut = Counter(), Counter()
    for transcript in sorted(run.glob("*/transcript.jsonl")):
        events = [json.loads(line) for line in transcript.open()]
        for end in (e["spent"] for e in events if e["event"] == "end" and e.get("spent")):
            for number, how in re.findall(r"(\d+) ([a-z -]+?)(?:,|$)", end.split(":", 1)[1]):
                spent[how.strip()] += int(number)
        notes = {(e.get("kind"), e.get("attempt")) for e in events if e["event"] == "note"}
        for n in {attempt for kind, attempt in notes if kind == "out_of_time"}:
            passed = [e["passed"] for e in events if e["event"] == "check" and e.get("attempt") == n][-1]
            cut["passed" if passed else "wrote nothing" if ("wrote_nothing", n) in notes else "out of time"] += 1
    return spent, cut


if __name__ == "__main__":
    for name in sys.argv[1:]:
        spent, cut = ends(Path(name))
        print(f"{Path(name).name}: {sum(spent.values())} attempts: "
              + ", ".join(f"{n} {how}" for how, n in spent.most_common())
              + f"; cut by the budget: {sum(cut.values())} ("
              + ", ".join(f"{n} {how}" for how, n in cut.most_common()) + ")")
