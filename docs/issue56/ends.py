#!/usr/bin/env python3
"""docs/issue56/ends.py OUT/LABEL [...]: how a run's attempts ended, summed over its tasks.

Read from each task's transcript.jsonl: the `end` event's `spent` line ("5 attempts in 175 s:
3 failed the check, 1 wrote nothing, 1 passed"), which code since issue 56 writes. One line a run.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path


def ends(run: Path) -> Counter:
    counts = Counter()
    for transcript in sorted(run.glob("*/transcript.jsonl")):
        spent = next((json.loads(line).get("spent") for line in transcript.open() if '"event": "end"' in line), None)
        if spent:
            for number, how in re.findall(r"(\d+) ([a-z -]+?)(?:,|$)", spent.split(":", 1)[1]):
                counts[how.strip()] += int(number)
    return counts


if __name__ == "__main__":
    for name in sys.argv[1:]:
        counts = ends(Path(name))
        print(f"{Path(name).name}: {sum(counts.values())} attempts: "
              + ", ".join(f"{n} {how}" for how, n in counts.most_common()))
