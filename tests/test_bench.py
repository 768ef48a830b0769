"""scripts/bench runs and prints every figure of its table; whether a target holds is not tested.

`scripts/bench --short` runs as a subprocess, as a user would run it: once with no server (the
server rows must say n/a, and the run must still succeed), and once against the session's real
llama-server (tests/llama.py), so the server rows are shown measuring real tokens.

Left out on purpose: any assertion on a time or a size (those depend on the machine, and belong
to the benchmark's own output).
"""

import importlib.machinery
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import sandbox

BENCH = Path(__file__).resolve().parent.parent / "scripts" / "bench"
LOCAL_ROWS = ["harness overhead per turn", "start-up: agent.py --help / import openai, rich",
              "peak memory of the agent process"]
SERVER_ROWS = ["fixed prompt: system + tool schemas", "prompt-cache reuse, turns 2+"]
SANDBOX_ROW = "sandbox cost per shell call"
NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def bench(tmp_path: Path, *flags: str) -> dict[str, list[str]]:
    """Run the benchmark; its table as {figure: [value, target, holds]}."""
    result = subprocess.run([sys.executable, str(BENCH), "--short", *flags], cwd=tmp_path,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[0] not in ("figure", "---"):
            rows[cells[0]] = cells[1:]
    for value, target, holds in rows.values():
        assert holds in ("yes", "NO", "—"), holds
    return rows


def test_short_run_without_a_server_prints_every_local_figure(tmp_path):
    rows = bench(tmp_path)
    assert set(rows) == {*LOCAL_ROWS, *SERVER_ROWS, SANDBOX_ROW}
    for figure in LOCAL_ROWS:
        assert NUMBER.match(rows[figure][0]), rows[figure]
    for figure in SERVER_ROWS:
        assert rows[figure][0].startswith("n/a (--short"), rows[figure]
    if sandbox.available():
        assert NUMBER.match(rows[SANDBOX_ROW][0]), rows[SANDBOX_ROW]
    else:
        assert rows[SANDBOX_ROW][0].startswith("n/a"), rows[SANDBOX_ROW]
    assert "first 10 turns" in rows["harness overhead per turn"][0]  # growth with history is shown


def test_short_run_against_a_real_server_counts_its_tokens(tmp_path, llama_server):
    rows = bench(tmp_path, "--base-url", llama_server.url)
    fixed = re.match(r"(\d+) tokens", rows["fixed prompt: system + tool schemas"][0])
    assert fixed and 100 < int(fixed.group(1)) < 5000, rows  # the prompt as the server tokenized it
    cache = rows["prompt-cache reuse, turns 2+"][0]
    # the 0.5B test model may finish in one turn; then the row must say so instead of a number
    assert re.match(r"\d+(\.\d+)?% \(\d+ of \d+ tokens", cache) or "the run had 1 turn" in cache, cache
    if "%" in cache:  # a real run's requests, read back from its transcript, only ever grew
        assert "history append-only: yes" in cache, cache


def load_bench():
    """scripts/bench as a module (its file name has no .py)."""
    loader = importlib.machinery.SourceFileLoader("bench", str(BENCH))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench", loader))
    loader.exec_module(module)
    return module


def test_speculation_replays_the_longest_replies_at_temperature_zero(tmp_path):
    import transcript
    log = transcript.writer(tmp_path / "task-a" / "transcript.jsonl", [])
    messages = [{"role": "user", "content": "go"}]
    for turn, made in enumerate([40, 300, 10, 120], start=1):
        log("request", turn=turn, body={"model": "m", "messages": messages, "stream": True, "seed": turn,
                                         "stream_options": {"include_usage": True}, "temperature": 0.7})
        log("response", turn=turn, body={"usage": {"completion_tokens": made}}, seconds=1.0)
        messages = [*messages, {"role": "assistant", "content": f"reply {turn}"}]
    log.close()
    turns = load_bench().write_turns([tmp_path / "task-a" / "transcript.jsonl"], 2)
    assert [t["made"] for t in turns] == [300, 120] and {t["task"] for t in turns} == {"task-a"}
    body = turns[0]["body"]
    assert body["temperature"] == 0 and body["max_tokens"] == 300 and len(body["messages"]) == 2
    assert not {"stream", "stream_options", "seed"} & set(body)  # one whole reply, the same for every setting


def test_parallel_sends_each_pair_in_a_row_then_at_once(tmp_path, llama_server):
    import transcript
    log = transcript.writer(tmp_path / "task-b" / "transcript.jsonl", [])
    for turn in (1, 2):
        log("request", turn=turn, body={"model": "m", "messages": [{"role": "user", "content": f"Say {turn}."}]})
        log("response", turn=turn, body={"usage": {"completion_tokens": 32 + turn}}, seconds=1.0)
    log.close()
    bench = load_bench()
    turns = bench.write_turns([tmp_path / "task-b" / "transcript.jsonl"], 2)
    said = []
    [(pair, made, in_a_row, at_once)] = bench.parallel(turns, tmp_path, said.append, model="0.5b")
    assert pair == "task-b + task-b" and made == 33 + 34 and in_a_row > 0 and at_once > 0
    assert said == ["parallel: task-b + task-b, in a row, then at once"]
    assert "n_slots = 2" in (tmp_path / "server-parallel.log").read_text()  # two slots: the two can run at once
