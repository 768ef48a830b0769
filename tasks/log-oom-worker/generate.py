"""Write files/jobs.log for the log-oom-worker task: 3,000 lines, deterministic (seeded).

Run once from this folder (`python generate.py`); the output is committed, this script is kept so
the log can be explained and rebuilt. The one OutOfMemoryError is on line 2,214, far past what
one read_file shows; near-misses (memory warnings, other ERRORs) sit around it.
"""

import random
from datetime import datetime, timedelta

rng = random.Random(31)
when = datetime(2024, 5, 2, 6, 0, 0)
lines = []
for number in range(1, 3001):
    when += timedelta(seconds=rng.randint(1, 9))
    stamp, worker, job = when.strftime("%Y-%m-%dT%H:%M:%SZ"), f"worker-{rng.randint(1, 32):02d}", f"J{rng.randint(10000, 99999)}"
    if number == 2214:
        worker, job = "worker-23", "J48151"
        lines.append(f"{stamp} ERROR {worker} job={job} killed: java.lang.OutOfMemoryError: Java heap space")
    elif number % 397 == 0:
        lines.append(f"{stamp} WARN {worker} job={job} memory at {rng.randint(85, 97)}% of limit")
    elif number % 613 == 0:
        lines.append(f"{stamp} ERROR {worker} job={job} failed: TimeoutError after 300s")
    elif rng.random() < 0.1:
        lines.append(f"{stamp} INFO {worker} job={job} started")
    else:
        lines.append(f"{stamp} INFO {worker} job={job} done in {rng.randint(20, 4000)}ms")
with open("files/jobs.log", "w") as f:
    f.write("\n".join(lines) + "\n")
