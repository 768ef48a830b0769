"""Write files/auth.log for the log-failed-logins task: 2,500 lines, deterministic (seeded).

Run once from this folder (`python generate.py`); the output is committed, this script is kept so
the log can be explained and rebuilt. 203.0.113.77 has the most failed passwords (41); the
runner-up has 36, and another address has the most lines overall (mostly successful logins).
"""

import random
from datetime import datetime, timedelta

rng = random.Random(12)
noise = [f"10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}" for _ in range(60)]
users = ["alice", "bob", "carol", "deploy", "backup", "git", "root", "admin", "www", "pi"]
events = ([("fail", "203.0.113.77")] * 41 + [("fail", "198.51.100.23")] * 36 + [("fail", "192.0.2.140")] * 30
          + [("ok", "10.0.4.8")] * 90 + [("fail", "10.0.4.8")] * 5)
while len(events) < 2500:
    kind = rng.choice(["ok", "ok", "ok", "fail", "disconnect", "session"])
    events.append((kind, rng.choice(noise)))
rng.shuffle(events)
when = datetime(2024, 3, 11, 0, 0, 0)
lines = []
for kind, ip in events:
    when += timedelta(seconds=rng.randint(1, 40))
    stamp, pid, user, port = when.strftime("%b %d %H:%M:%S"), rng.randint(1000, 65000), rng.choice(users), rng.randint(30000, 65000)
    text = {"fail": f"Failed password for {user} from {ip} port {port} ssh2",
            "ok": f"Accepted password for {user} from {ip} port {port} ssh2",
            "disconnect": f"Received disconnect from {ip} port {port}:11: disconnected by user",
            "session": f"pam_unix(sshd:session): session opened for user {user} by (uid=0)"}[kind]
    lines.append(f"{stamp} gate sshd[{pid}]: {text}")
with open("files/auth.log", "w") as f:
    f.write("\n".join(lines) + "\n")
