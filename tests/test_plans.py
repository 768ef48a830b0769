"""The lesson's check, on tooloop's real loop and dispatcher: 3,000 seeded random plans, twice.

A scripted model follows a fixed plan of calls (valid ones, unknown tools, refused ones and
malformed arguments) and then answers "done", under a random turn cap. For each plan, a
brute-force reading of the plan alone predicts the number of model calls, the exit code and the
answer, which calls ran (seen through their effects on disk), and whether each call got a real
result or an error back. It is run twice: with `--plain` (no aid: the article's loop and the
lesson's rules) and with every aid on, whose rules the reading spells out from aids.py.
"""

import os
import random

import pytest

import agent
import aids
import endpoint
import tools
from fake_server import answer, call, reply

TASK = "Update the notes."
PLANS = int(os.environ.get("TOOLOOP_PLANS", 3000))  # fewer for a quick local run

# kind -> (tool name, arguments as sent, is it a valid call that runs?)
KINDS = {
    "write": lambda k: ("write_file", {"path": f"out/{k}.txt", "content": "x" * (k + 1)}, True),
    "shell": lambda k: ("run_shell", {"command": f"echo {k} >> shell.log"}, True),
    "read": lambda k: ("read_file", {"path": "notes.txt"}, True),
    "escape": lambda k: ("write_file", {"path": f"../escaped-{k}.txt", "content": "x"}, False),
    "unknown": lambda k: ("wipe_db", {"path": "notes.txt"}, False),
    "missing": lambda k: ("write_file", {"path": f"out/{k}.txt"}, False),
    "extra": lambda k: ("read_file", {"path": "notes.txt", "force": True}, False),
    "wrong_type": lambda k: ("run_shell", {"command": k}, False),
    "bad_json": lambda k: ("read_file", '{"path": "notes.txt"', False),
}


def plain_reading(plan, cap):
    """--plain: each call runs if it is valid, else gets an error result; the answer ends the
    run (exit 0); the cap ends it with exit 3. Returns (model calls, exit code, answer, [(step,
    tool) that ran], [did step i run, for each step that got a result])."""
    steps = plan[:cap]
    results = [valid for _, _, valid in steps]
    ran = [(k, name) for k, (name, _, valid) in enumerate(steps) if valid]
    if len(plan) + 1 > cap:
        return cap, 3, "", ran, results
    return len(plan) + 1, 0, "done", ran, results


def aided_reading(plan, cap):
    """Every aid on, read off aids.py for this model: text-calls reads calls written as text and
    holds back a call planned, in the same reply, before a result it needed. Here every reply is
    one structured call, then "done": it never acts, so the reading is the plain loop's."""
    return plain_reading(plan, cap)


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


@pytest.mark.parametrize("mode", ["plain", "aids"])
def test_3000_random_plans_match_a_brute_force_reading(shared_fake, tmp_path, monkeypatch, mode):
    monkeypatch.setattr(agent.console, "quiet", True)
    reading = plain_reading if mode == "plain" else aided_reading
    rng = random.Random(32)
    outcomes = set()
    send = endpoint.sender(shared_fake.url, "local")  # one client (and its connection) for all the plans
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
        ask = agent.model_caller(send, "fake", totals, cap)
        hooks = aids.Hooks() if mode == "plain" else aids.text_calls(settings)
        code, answer_text = agent.run(TASK, ask, settings, cap, hooks)

        # brute force: read the plan directly
        steps, code_expected, answer_expected, ran, results = reading(plan, cap)
        outcomes.add(code_expected)
        assert len(shared_fake.requests) == steps, n
        assert (code, answer_text) == (code_expected, answer_expected), n
        written = sorted(int(p.stem) for p in (ws / "out").glob("*.txt")) if (ws / "out").exists() else []
        assert written == [k for k, name in ran if name == "write_file"], n
        shell_log = (ws / "shell.log").read_text().split() if (ws / "shell.log").exists() else []
        assert shell_log == [str(k) for k, name in ran if name == "run_shell"], n
        assert not list((tmp_path / f"plan{n}").glob("escaped-*")), n
        # every result the model saw is an error exactly when the plan's call should not run
        seen = [m["content"] for m in shared_fake.requests[-1]["messages"] if m["role"] == "tool"]
        assert [not s.startswith("Error:") for s in seen] == results[:len(seen)], n
        assert all(s == "hello notes" for s, p, runs in zip(seen, plan, results) if p[0] == "read_file" and runs), n
        # the model got no message but the tools' results
        assert all(m["role"] != "user" for m in shared_fake.requests[-1]["messages"][2:]), n
    if PLANS >= 1000:  # the plans reach every ending of the mode
        assert outcomes == {0, 3}, outcomes
