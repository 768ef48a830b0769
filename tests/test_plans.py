"""The lesson's check, on tooloop's real loop and dispatcher: 3,000 seeded random plans.

A scripted model follows a fixed plan of calls (valid ones, unknown tools, refused ones and
malformed arguments) and then answers, under a random turn cap. For each plan, a brute-force
reading of the plan alone predicts the number of model calls, whether an answer arrives (or the
repeat guard stops the run), which calls ran (seen through their effects on disk), and whether
each call got a real result or an error back.
"""

import json
import os
import random

import pytest

import agent
import tools
from fake_server import answer, call, reply

TASK = "Update the notes."  # a change (so the notes for one apply), naming no file
# kind -> (tool name, arguments as sent, does it run?)
PLANS = int(os.environ.get("TOOLOOP_PLANS", 3000))  # fewer for a quick local run

KINDS = {
    "write": lambda k: ("write_file", {"path": f"out/{k}.txt", "content": str(k)}, True),
    "shell": lambda k: ("run_shell", {"command": f"echo {k} >> shell.log"}, True),
    "read": lambda k: ("read_file", {"path": "notes.txt"}, True),
    "escape": lambda k: ("write_file", {"path": f"../escaped-{k}.txt", "content": "x"}, False),
    "unknown": lambda k: ("wipe_db", {"path": "notes.txt"}, False),
    "missing": lambda k: ("write_file", {"path": f"out/{k}.txt"}, False),
    "extra": lambda k: ("read_file", {"path": "notes.txt", "force": True}, False),
    "wrong_type": lambda k: ("run_shell", {"command": k}, False),
    "bad_json": lambda k: ("read_file", '{"path": "notes.txt"', False),
}


def brute_force(plan, cap):
    """What must happen, read off the plan alone: (model calls, exit code, [(step, tool) that
    ran], [did step i run, for each step that got a result]). The rules: at most `cap` model
    calls; a valid call runs unless it is the 3rd identical call in a row; a 4th stops (exit 5); the
    task asks for a change, so the model's answer is refused MAX_NUDGES times before it counts
    when no file has changed or the last call failed, and once after a write with no shell
    command since."""
    ran, results, last, streak = [], [], None, 0
    for turn, (name, args, valid) in enumerate(plan[:cap], start=1):
        key = (name, json.dumps(args, sort_keys=True) if isinstance(args, dict) else args)
        streak, last = (streak + 1 if key == last else 1), key
        if streak > 3:
            return turn, 5, ran, results
        runs = valid and streak < 3
        results.append(runs)
        if runs:
            ran.append((turn - 1, name))
    # an answer with no file changed, or right after a failed call, is nudged MAX_NUDGES times
    # before it is taken; else an answer with a file written and no shell command run since, once
    writes = [step for step, name in ran if name == "write_file"]
    untested = writes and not any(name == "run_shell" and step > writes[-1] for step, name in ran)
    unchanged = not any(name in ("write_file", "run_shell") for _, name in ran)
    nudges = agent.MAX_NUDGES if unchanged or (results and not results[-1]) else 1 if untested else 0
    calls = len(plan) + 1 + nudges
    return min(calls, cap), (0 if calls <= cap else 3), ran, results


def scripted(plan):
    """A model that follows a fixed plan of calls, then answers."""
    def model(request):
        done = sum(m["role"] == "tool" for m in request["messages"])
        if done < len(plan):
            name, args, _ = plan[done]
            return reply(call(name, args))
        return answer("done")
    return model


@pytest.fixture(scope="module")
def shared_fake():
    from fake_server import FakeServer
    server = FakeServer()
    yield server
    server.close()


def test_3000_random_plans_match_a_brute_force_reading(shared_fake, tmp_path, monkeypatch):
    monkeypatch.setattr(agent.console, "quiet", True)
    rng = random.Random(32)
    for n in range(PLANS):
        plan = [KINDS[rng.choice(list(KINDS))](k) for k in range(rng.randint(0, 9))]
        cap = rng.randint(1, 8)
        ws = tmp_path / f"plan{n}" / "ws"
        ws.mkdir(parents=True)
        (ws / "notes.txt").write_text("hello notes")
        shared_fake.requests.clear()
        shared_fake.script = [scripted(plan)] * (cap + 3)
        settings = tools.Settings(workspace=ws)

        totals = {"turns": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
        ask = agent.caller(agent.live(shared_fake.url, "local"), "fake", totals, cap)
        code, answer_text = agent.run(TASK, ask, settings, cap)

        # brute force: read the plan directly
        steps, code_expected, ran, results = brute_force(plan, cap)
        assert len(shared_fake.requests) == steps, n
        assert (code, answer_text) == (code_expected, "done" if code_expected == 0 else ""), n
        written = sorted(int(p.stem) for p in (ws / "out").glob("*.txt")) if (ws / "out").exists() else []
        assert written == [k for k, name in ran if name == "write_file"], n
        shell_log = (ws / "shell.log").read_text().split() if (ws / "shell.log").exists() else []
        assert shell_log == [str(k) for k, name in ran if name == "run_shell"], n
        assert not list((tmp_path / f"plan{n}").glob("escaped-*")), n
        # every result the model saw is an error exactly when the plan's call should not run
        seen = [m["content"] for m in shared_fake.requests[-1]["messages"] if m["role"] == "tool"]
        assert [not s.startswith("Error:") for s in seen] == results[:len(seen)], n
        assert all(s == "hello notes" for s, p, runs in zip(seen, plan, results) if p[0] == "read_file" and runs), n
