#!/usr/bin/env python3
"""docs/issue56/table.py TSV [TSV ...]: one markdown row a run, from docs/issue55/summary.py's TSVs.

Only the tasks run with a check count (the `--checks` runs' others have one attempt and no budget):
solved (the suite's strict check), the user's check passed, attempts started, of them wrote nothing,
wall seconds and generated tokens over those tasks, and both per solved task.
"""

import csv
import sys
from pathlib import Path


def line(path: Path) -> str:
    rows = [r for r in csv.DictReader(path.open(), delimiter="\t") if r["passed_at"] != "no check"]
    solved = sum(r["solved"] == "yes" for r in rows)
    seconds = sum(float(r["seconds"]) for r in rows)
    tokens = sum(int(r["generated_tokens"]) for r in rows if r["generated_tokens"].isdigit())
    per = (lambda total: f"{total / solved:,.0f}") if solved else (lambda total: "-")
    return (f"| {path.stem} | **{solved}/{len(rows)}** | {sum(r['passed_at'] != '-' for r in rows)}/{len(rows)} "
            f"| {sum(int(r['attempts']) for r in rows)} | {sum(int(r['attempts_wrote_nothing']) for r in rows)} "
            f"| {seconds:,.0f} | {tokens:,} | {per(seconds)} | {per(tokens)} |")


if __name__ == "__main__":
    print("| run | solved | the user's check passed | attempts | of them wrote nothing | seconds | generated tokens "
          "| seconds per solved task | tokens per solved task |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in sys.argv[1:]:
        print(line(Path(name)))
