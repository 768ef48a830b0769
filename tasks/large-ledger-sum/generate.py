"""Write files/ledger.txt for the large-ledger-sum task: 5,000 lines, deterministic (seeded).

Run once from this folder (`python generate.py`); the output is committed, this script is kept so
the file can be explained and rebuilt. Every line is `DATE KIND AMOUNT`; the kinds are deposit,
withdrawal and fee; a handful of comment lines start with `#`.
"""

import random
from datetime import date, timedelta

rng = random.Random(404)
lines, day = ["# account 4471-22 ledger, amounts in EUR"], date(2023, 1, 1)
while len(lines) < 5000:
    if rng.random() < 0.3:
        day += timedelta(days=1)
    if rng.random() < 0.004:
        lines.append(f"# checked by auditor on {day.isoformat()}")
        continue
    kind = rng.choices(["deposit", "withdrawal", "fee"], weights=[5, 4, 1])[0]
    cents = {"deposit": rng.randint(1000, 90000), "withdrawal": rng.randint(500, 80000), "fee": rng.randint(50, 900)}[kind]
    lines.append(f"{day.isoformat()} {kind} {cents // 100}.{cents % 100:02d}")
with open("files/ledger.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
