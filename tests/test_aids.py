"""The small-model aids (aids.py), one section each, driven through the real agent.

Every test runs cli.main in-process (conftest's `run_agent`) against the scripted fake server
over real HTTP, with real files and real commands, and checks what the model was sent and what
happened in the workspace. Where an aid matters, the same script is also run with that aid
switched off (`--plain`), to show the plain loop's behaviour. The
text formats that recover.py reads are covered in test_recover.py.
"""

import json
import re
import subprocess
import sys

import pytest

import agent
import aids
import prompts
import screen as screen_module
import transcript
from fake_server import Status, answer, call, reply

FENCED = 'I will write it.\n```json\n{"name": "write_file", "arguments": {"path": "a.py", "content": "print(1)\\n"}}\n```'
KIMI = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.run_shell:0<|tool_call_argument_begin|>"
        '{"command": "echo hi > b.txt"}<|tool_call_end|><|tool_calls_section_end|>')


def results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def flat(text: str) -> str:
    return " ".join(text.split())  # the screen wraps long lines


# --- none at all: --plain ------------------------------------------------------------------------

PLAIN_CALL = '```json\n{"name": "run_shell", "arguments": {"command": "touch x"}}\n```'


def test_plain_takes_a_call_written_as_text_as_the_answer(run_agent, fake, workspace):
    code, out, _ = run_agent(answer(PLAIN_CALL), answer("never asked"), flags=["--plain"])
    assert code == 0 and out == PLAIN_CALL + "\n"
    assert len(fake.requests) == 1
    assert not (workspace / "x").exists()  # nothing was run


def test_without_plain_the_same_call_is_run(run_agent, fake, workspace):
    code, out, _ = run_agent(answer(PLAIN_CALL), answer("Made x."))
    assert code == 0 and out == "Made x.\n"
    assert (workspace / "x").exists() and len(fake.requests) == 2


def test_help_names_every_aid():
    out = subprocess.run([sys.executable, agent.__file__, "--help"], capture_output=True, text=True,
                         check=True).stdout
    aids_part = out.split("aids (", 1)[1].split("exit codes:", 1)[0]
    assert [line.strip() for line in aids_part.splitlines()[1:] if line.strip()] == list(aids.NAMES)
    assert "--plain" in out and "--no-aid" not in out  # one aid left: --plain is its switch


# --- text-calls: calls written as text ---------------------------------------------------------------

def test_a_call_written_as_text_is_recovered_and_run(run_agent, fake, workspace):
    code, out, err = run_agent(answer(FENCED), reply(call("run_shell", command="python3 a.py")), answer("done"))
    assert code == 0 and out == "done\n"
    assert (workspace / "a.py").read_text() == "print(1)\n"
    assert "recovered 1 tool call(s) from the reply's text (write_file of a.py: text-call)" in flat(err)
    # the history sent back is valid: a structured call, answered by a tool message with its id
    assistant, result = fake.requests[1]["messages"][2:]
    assert assistant == {"role": "assistant", "content": "", "tool_calls": [{
        "id": "recovered_0_0", "type": "function",
        "function": {"name": "write_file", "arguments": '{"path": "a.py", "content": "print(1)\\n"}'}}]}
    assert result == {"role": "tool", "tool_call_id": "recovered_0_0", "content": "wrote 9 bytes (1 lines) to a.py"}


def test_without_text_calls_a_fenced_call_is_not_run(run_agent, fake, workspace):
    # the fenced call is the answer, as in the plain loop
    code, out, _ = run_agent(answer(FENCED), flags=["--plain"])
    assert code == 0 and out == FENCED + "\n" and len(fake.requests) == 1
    assert not (workspace / "a.py").exists()


def test_a_whole_file_in_a_code_block_is_written_and_a_sh_block_is_run(run_agent, fake, workspace):
    text = "Create `fizz.py`:\n```python\nprint('Fizz')\n```\nThen run:\n```sh\npython fizz.py\n```"
    code, out, err = run_agent(answer(text), answer("done"))
    assert code == 0 and out == "done\n"
    assert (workspace / "fizz.py").read_text() == "print('Fizz')\n"
    assert ("recovered 2 tool call(s) from the reply's text (write_file of fizz.py: file-named; run_shell of "
            "'python fizz.py': sh-block)") in flat(err)
    notes = [e for e in transcript.read(workspace.parent / "transcript.jsonl") if e["event"] == "note"]
    assert [e["rules"] for e in notes if e["kind"] == "recovered"] == [["file-named", "sh-block"]]
    written, ran = fake.requests[1]["messages"][2]["tool_calls"]
    assert ran["function"] == {"name": "run_shell", "arguments": json.dumps({"command": "python fizz.py"})}
    assert fake.requests[1]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\nFizz\n"
    assert written["function"] == {
        "name": "write_file", "arguments": json.dumps({"path": "fizz.py", "content": "print('Fizz')\n"})}


def test_a_file_shown_then_a_call_to_run_it_are_both_run_in_order(run_agent, fake, workspace):
    text = ("### Step 1: write `fizz.py`\n```python\nprint('Fizz')\n```\n### Step 2: run it\n"
            '```json\n{"name": "run_shell", "arguments": {"command": "python3 fizz.py"}}\n```')
    code, _, _ = run_agent(answer(text), answer("done"))
    assert code == 0
    write, run = results(fake.requests[1])
    assert write.startswith("wrote") and run.startswith("exit code: 0") and "Fizz" in run


FIZZBUZZ = ("# fizzbuzz.py\nfor i in range(1, 21):\n    if i % 15 == 0:\n        print('FizzBuzz')\n    elif i % 3 == 0:\n"
            "        print('Fizz')\n    elif i % 5 == 0:\n        print('Buzz')\n    else:\n        print(i)\n")


def test_a_file_shown_under_its_name_is_written_before_the_command_that_runs_it(run_agent, fake, workspace):
    # the reply of the quick start's task on a fresh machine: the program, headed by its name as a
    # comment (as the 1.5B model writes it), then the call that runs it; before, the call ran alone
    text = ("Here is the content of `fizzbuzz.py`:\n\n```python\n" + FIZZBUZZ + "```\n\nNow I will run it:\n\n"
            '```json\n{"name": "run_shell", "arguments": {"command": "python fizzbuzz.py"}}\n```')
    code, out, err = run_agent(answer(text), answer("fizzbuzz.py prints FizzBuzz for 1..20."),
                               task="Write fizzbuzz.py that prints FizzBuzz for 1..20, then run it")
    assert code == 0 and (workspace / "fizzbuzz.py").read_text() == FIZZBUZZ
    write, run = results(fake.requests[1])
    assert write.startswith("wrote") and run.startswith("exit code: 0") and "14\nFizzBuzz\n16" in run
    assert "(write_file of fizzbuzz.py: file-named; run_shell of 'python fizzbuzz.py': text-call)" in flat(err)


ADVICE = ("`report.py` reads `data/important.csv` and prints its total; I changed nothing, as asked. If you ever "
          "want to start over you could run ```sh rm -rf data``` but only after a backup: nothing else has the numbers.")


@pytest.mark.parametrize("text", [ADVICE, ADVICE.replace("```sh rm -rf data```", "\n```sh\nrm -rf data\n```\n")],
                         ids=["inline", "block"])
def test_a_command_shown_as_advice_in_an_answer_is_never_run_nor_cut(run_agent, fake, workspace, text):
    (workspace / "data").mkdir()
    (workspace / "data" / "important.csv").write_text("amount\n12\n")
    (workspace / "report.py").write_text("print(sum(int(n) for n in open('data/important.csv').read().split()[1:]))\n")
    fake.piece = 8  # streamed in small pieces, as llama-server does: the fence closes long before the end
    code, out, err = run_agent(reply(call("read_file", path="report.py")), answer(text), answer("never asked"),
                               task="Look at report.py and tell me what it does. Change nothing.")
    assert code == 0 and out == text + "\n"  # the whole answer, the warning after the block included
    assert (workspace / "data" / "important.csv").read_text() == "amount\n12\n"
    assert len(fake.requests) == 2 and not any(stream["hung_up"] for stream in fake.streams)
    assert "recovered" not in err and "no files changed" in err


def test_kimi_markup_is_recovered(run_agent, fake, workspace):
    code, _, _ = run_agent(answer(KIMI), answer("done"))
    assert code == 0 and (workspace / "b.txt").read_text() == "hi\n"


def test_a_tool_called_as_a_python_function_is_recovered(run_agent, fake, workspace):
    (workspace / "sales.csv").write_text("region,amount\nNorth,2.5\n")
    code, out, _ = run_agent(answer("```python\nread_file('sales.csv')\n```"), answer("2.50"))
    assert code == 0 and out == "2.50\n"
    assert fake.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "recovered_0_0",
                                                "content": "region,amount\nNorth,2.5\n"}


def test_a_program_in_a_python_block_is_run(run_agent, fake, workspace):
    (workspace / "s.csv").write_text("region,amount\nNorth,1.5\nSouth,2\nNorth,2.25\n")
    program = ("import csv\nrows = csv.DictReader(open('s.csv'))\n"
               "total = sum(float(r['amount']) for r in rows if r['region'] == 'North')\n"
               "open('total.txt', 'w').write(f'{total:.2f}')\nprint(total)")
    code, out, err = run_agent(answer(f"Here is the code:\n```python\n{program}\n```"), answer("3.75"))
    assert code == 0 and out == "3.75\n" and (workspace / "total.txt").read_text() == "3.75"
    assert fake.requests[1]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\n3.75\n"
    assert "(run_shell of a 7-line command: python-program)" in flat(err)


def test_a_snippet_that_would_drop_code_is_not_written(run_agent, fake, workspace):
    old = "def mean(v):\n    return 1\n\n\ndef median(v):\n    return 2\n"
    (workspace / "stats.py").write_text(old)
    text = "The fixed median in `stats.py`:\n```python\ndef median(v):\n    return 3\n```"
    code, out, _ = run_agent(answer(text), answer("never asked"))
    assert code == 0 and out == text + "\n" and len(fake.requests) == 1  # no call: the reply is the answer
    assert (workspace / "stats.py").read_text() == old  # never read: nothing spliced


def test_a_function_shown_alone_is_spliced_into_a_file_the_run_read(run_agent, fake, workspace):
    old = "def mean(v):\n    return sum(v) / len(v)\n\n\ndef median(v):\n    return max(v)\n"
    (workspace / "stats.py").write_text(old)
    fix = "The corrected code is:\n```python\ndef median(v):\n    return sorted(v)[len(v) // 2]\n```"
    code, out, _ = run_agent(reply(call("read_file", path="stats.py")), answer(fix),
                             reply(call("run_shell", command="python3 -c 'import stats'")), answer("Fixed."))
    assert code == 0 and out == "Fixed.\n"
    assert (workspace / "stats.py").read_text() == old.replace("return max(v)", "return sorted(v)[len(v) // 2]")


def test_an_unnamed_new_version_of_a_file_the_run_read_is_written(run_agent, fake, workspace):
    (workspace / "greet.py").write_text("def main():\n    print('hi')\n\n\nmain()\n")
    new = "def main():\n    print('HI')\n\n\nmain()\n"
    code, _, err = run_agent(reply(call("read_file", path="greet.py")), answer(f"```python\n{new}```"),
                             reply(call("run_shell", command="python3 greet.py")), answer("done"))
    assert code == 0 and (workspace / "greet.py").read_text() == new
    assert "(write_file of greet.py: file-unnamed)" in flat(err)


def test_a_file_in_triple_quotes_without_its_braces_is_written_unless_the_reply_was_cut_off(run_agent, fake, workspace):
    text = '{"name": "write_file", "arguments": {"path": "hi.py", "content": ' + '"""print("hi")\nprint("bye")\n"""'
    code, _, err = run_agent(reply(content=text, finish_reason="length"), answer("ok"), answer("ok"), answer("ok"))
    assert not (workspace / "hi.py").exists()  # cut off: the string may not have ended there
    assert "recovered" not in flat(err)
    code, _, err = run_agent(answer(text), reply(call("run_shell", command="python3 hi.py")), answer("Done."))
    assert code == 0 and (workspace / "hi.py").read_text() == 'print("hi")\nprint("bye")\n'
    assert results(fake.requests[-1])[-1] == "exit code: 0\n--- stdout ---\nhi\nbye\n"


def test_calls_after_a_failed_one_in_the_same_reply_are_not_run(run_agent, fake, workspace):
    both = reply(call("run_shell", command="false"), call("write_file", path="a.txt", content="x"))
    code, _, _ = run_agent(both, answer("It failed."), answer("It failed, sorry."), answer("Nothing to do."))
    assert not (workspace / "a.txt").exists()
    first, second = results(fake.requests[1])
    assert first.startswith("exit code: 1") and second == aids.SKIPPED
    # switched off, each call runs whatever came before it
    fake.requests.clear()
    run_agent(both, answer("ok"), flags=["--plain"])
    assert (workspace / "a.txt").read_text() == "x"
    assert results(fake.requests[1])[1] == "wrote 1 bytes (1 lines) to a.txt"


def test_a_command_after_a_skipped_write_is_not_run(run_agent, fake, workspace):
    (workspace / "notes.md").write_text("keep\n")
    code, _, _ = run_agent(reply(call("run_shell", command="grep -c 5 notes.md"),  # no match: exit 1
                                 call("write_file", path="count.txt", content="5"),
                                 call("run_shell", command="rm notes.md")), answer("ok"))
    assert results(fake.requests[1])[1:] == [aids.SKIPPED, aids.SKIPPED]
    assert (workspace / "notes.md").exists() and not (workspace / "count.txt").exists()


def test_a_command_after_a_read_or_a_good_write_runs(run_agent, fake, workspace):
    (workspace / "a.py").write_text("print(1)\n")
    run_agent(reply(call("read_file", path="a.py"), call("run_shell", command="python3 a.py")),
              reply(call("write_file", path="b.py", content="print(2)\n"), call("run_shell", command="python3 b.py")),
              answer("ok"))
    assert results(fake.requests[2]) == ["print(1)\n", "exit code: 0\n--- stdout ---\n1\n",
                                         "wrote 9 bytes (1 lines) to b.py", "exit code: 0\n--- stdout ---\n2\n"]


def test_output_quoted_from_a_real_run_is_not_called_imagined_nor_run_again(run_agent, fake, workspace):
    (workspace / "server.log").write_text("10:23:07 INFO req-7308 ok\n10:23:08 ERROR req-7309 timeout\n")
    quoted = "```sh\ngrep ERROR server.log\n```\nOutput:\n```\n10:23:08 ERROR req-7309 timeout\n```\nIt is req-7309."
    code, out, _ = run_agent(reply(call("run_shell", command="grep ERROR server.log")), answer(quoted))
    assert code == 0 and out == quoted + "\n" and len(fake.requests) == 2


def test_a_sh_block_runs_a_command_again_after_a_write(run_agent, fake, workspace):
    fix = "Fixed `t.py`:\n```python\nprint('ok')\n```\n```sh\npython t.py\n```"
    code, out, _ = run_agent(reply(call("write_file", path="t.py", content="1/0")),
                             reply(call("run_shell", command="python t.py")), answer(fix), answer("done"))
    assert code == 0 and out == "done\n"
    assert fake.requests[3]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\nok\n"


def test_a_command_shown_after_a_write_is_run_and_shown_again_is_a_quote(run_agent, fake):
    shown = "To run it:\n```sh\npython a.py\n```"
    code, out, _ = run_agent(reply(call("write_file", path="a.py", content="print(1)\n")), answer(shown), answer(shown))
    assert code == 0 and out == shown + "\n"  # the second time, the command has run: an answer
    assert fake.requests[2]["messages"][-1] == {"role": "tool", "tool_call_id": "recovered_1_0",
                                                "content": "exit code: 0\n--- stdout ---\n1\n"}
    assert len(fake.requests) == 3


def test_a_whole_call_written_as_text_before_the_cut_does_not_run(run_agent, fake, workspace):
    # the core's rule holds for recovered calls too: nothing in a reply cut off at the token limit runs
    rambling = FENCED + "\n\nNext I will call" + " and then" * 50
    code, _, err = run_agent(reply(content=rambling, finish_reason="length"), reply(call("run_shell", command="true")),
                             answer("ok"))
    assert code == 0 and not (workspace / "a.py").exists()
    assert "recovered 1 tool call(s)" in err
    assert fake.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": fake.requests[1]["messages"][-2][
        "tool_calls"][0]["id"], "content": prompts.CUT_OFF}


def test_a_text_reply_cut_off_is_not_taken_as_the_answer(run_agent, fake, workspace):
    (workspace / "a.txt").write_text("42\n")
    code, out, _ = run_agent(reply(call("read_file", path="a.txt")),
                             reply(content="The answer is", finish_reason="length"), answer("The answer is 42."),
                             )
    assert code == 0 and out == "The answer is 42.\n"
    assert fake.requests[2]["messages"][-1] == {"role": "user", "content": prompts.CUT_OFF}
    fake.requests.clear()  # the core's rule: under --plain too
    code, out, _ = run_agent(reply(content="The answer is", finish_reason="length"), answer("42."), flags=["--plain"])
    assert code == 0 and out == "42.\n" and fake.requests[1]["messages"][-1]["content"] == prompts.CUT_OFF


def test_a_call_cut_off_at_the_token_limit_is_never_run(run_agent, fake, workspace):
    cut = call("write_file", path="half.txt", content="def f(")
    code, _, _ = run_agent(reply(cut, finish_reason="length"), answer("ok"), answer("ok, done"))
    assert not (workspace / "half.txt").exists()


# --- the core's own help: parser errors, overflow, reasoning, the start-up check -----------------------

PARSER_500 = Status(500, {"error": {"code": 500, "type": "server_error",
                                    "message": "Failed to parse input at pos 12: <tool_call>{bad"}})


def test_a_parser_error_gets_one_corrective_retry(run_agent, fake):
    code, out, err = run_agent(PARSER_500, answer("done"), flags=["--plain"])
    assert code == 0 and out == "done\n"
    corrective = fake.requests[1]["messages"][-1]
    assert corrective == {"role": "user", "content": prompts.SERVER_PARSE_ERROR.format(
        error="Failed to parse input at pos 12: <tool_call>{bad")}


def test_a_read_of_a_missing_file_says_so_in_the_workspaces_terms(run_agent, fake, workspace, runs_folder):
    # small models often read the file the task asks for before it exists; the OS's error would name
    # the run's copy of the workspace, and the model went looking for the file there
    code, _, _ = run_agent(reply(call("read_file", path="fizzbuzz.py")), answer("ok"))
    [result] = results(fake.requests[1])
    assert result == "Error: FileNotFoundError: fizzbuzz.py does not exist (yet): write_file creates it"
    assert str(runs_folder) not in result and "Errno" not in result


@pytest.mark.parametrize("script, flags, line", [
    ([reply(call("write_file", path="a.txt", content="1\n")), answer("Wrote a.txt.")], [],
     "exit code 0: an answer, unverified (no --check ran); created a.txt"),
    ([answer("It is done.")], [], "exit code 0: an answer, unverified (no --check ran); no file changed"),
    ([answer("Done."), reply(call("write_file", path="a.txt", content="1\n")), answer("Wrote a.txt.")],
     ["--check", "test -f a.txt"],
     "exit code 0: attempt 2 passed the check (2 attempts in N s: 1 wrote nothing, 1 passed); created a.txt"),
], ids=["unverified-change", "unverified-nothing", "checked"])
def test_the_end_line_says_what_this_run_did(run_agent, fake, workspace, script, flags, line):
    # exit code 0 means an answer, or with --check a check passed: the line says which, and what changed
    code, _, err = run_agent(*script, flags=flags)
    assert code == 0 and re.sub(r" in \d+ s:", " in N s:", err.rstrip().splitlines()[-1]) == line


def test_a_second_parser_error_is_exit_1(run_agent, fake):
    code, out, err = run_agent(*[PARSER_500] * 4)
    assert code == 1 and out == "" and "could not parse the model's reply twice" in err


def context_window(limit_chars, then):
    """A fake server with a context window: a request longer than `limit_chars` is refused
    the way llama-server refuses it."""
    def serve(request):
        size = len(json.dumps(request["messages"]))
        if size > limit_chars:
            return Status(400, {"error": {"code": 400, "type": "exceed_context_size_error",
                                          "message": "the request exceeds the available context size",
                                          "n_prompt_tokens": size // 4, "n_ctx": limit_chars // 4}})
        return then
    return serve


def test_context_overflow_compacts_old_tool_results(run_agent, fake, workspace):
    for n in range(3):
        (workspace / f"big{n}.txt").write_text("word " * 1100)  # 5,500 characters each
    reads = [reply(call("read_file", path=f"big{n}.txt")) for n in range(3)]
    code, out, err = run_agent(*[context_window(15_000, r) for r in reads],
                               context_window(15_000, answer("done")), context_window(15_000, answer("done")))
    assert code == 0 and out == "done\n"
    assert "context full" in err and "shortened tool output" in flat(err)
    last = fake.requests[-1]["messages"]
    assert len(json.dumps(last)) <= 15_000
    assert last[0]["role"] == "system" and last[1]["content"] == "do the task"  # kept
    assert last[3]["content"].startswith("[compacted: 5500 characters of old output removed")
    assert last[-1]["content"] == "word " * 1100  # the recent turns are kept whole
    # the transcript records what was sent: a full body again after the rewrite, then appends only
    recorded = [e for e in transcript.read(workspace.parent / "transcript.jsonl") if e["event"] == "request"]
    assert [e["body"]["messages"] for e in recorded] == [r["messages"] for r in fake.requests]
    raw = [json.loads(line) for line in (workspace.parent / "transcript.jsonl").read_text().splitlines()]
    assert [e.get("after") for e in raw if e["event"] == "request"] == [None, 2, 4, 6, None]


def test_a_context_that_cannot_fit_is_exit_4(run_agent, fake):
    code, out, err = run_agent(context_window(100, answer("never")))
    assert code == 4 and out == ""
    assert "no longer fits the model's context" in flat(err)


def test_reasoning_is_shown_dim_and_kept_out_of_the_answer(run_agent):
    code, out, err = run_agent(reply(content="Paris", reasoning_content="The user asks for a capital."),
                               flags=["--plain"])
    assert code == 0 and out == "Paris\n"
    assert "The user asks for a capital." in err


def test_start_up_check_reads_llama_server_props(run_agent, fake):
    fake.extra_routes["/props"] = (200, {"default_generation_settings": {"n_ctx": 2048},
                                         "chat_template_caps": {"supports_tool_calls": False}})
    code, _, err = run_agent(answer("ok"), flags=["--plain"])
    assert code == 0 and fake.gets == ["/props"]
    assert "does not support tool calls" in flat(err) and "context is only 2048 tokens" in flat(err)
    assert f"context {len(json.dumps(fake.requests[0]['messages'])) // 4}/2048" in err


def test_start_up_check_costs_nothing_on_a_plain_server_and_can_be_skipped(run_agent, fake):
    code, _, err = run_agent(answer("ok"), flags=["--plain"])
    assert code == 0 and fake.gets == ["/props"] and "warning" not in err  # a 404: left alone
    fake.gets.clear()
    code, _, _ = run_agent(answer("ok"), flags=["--plain", "--no-probe"])
    assert code == 0 and fake.gets == []


# --- text-calls: calls planned before the results they needed ------------------------------------

def test_a_read_after_a_failed_command_in_the_same_reply_still_runs(run_agent, fake, workspace):
    (workspace / "a.py").write_text("print(1)\n")
    run_agent(reply(call("run_shell", command="exit 2"), call("read_file", path="a.py"),
                    call("write_file", path="a.py", content="print(2)\n"), call("run_shell", command="touch ran")),
              answer("done (1)"), answer("done (2)"), answer("done (3)"), answer("done (4)"), answer("done (5)"))
    first = fake.requests[1]["messages"][-4:]
    assert [m["content"] for m in first][1:] == ["print(1)\n", aids.SKIPPED, aids.SKIPPED]
    assert (workspace / "a.py").read_text() == "print(1)\n" and not (workspace / "ran").exists()


def test_a_write_planned_before_the_file_was_read_is_not_run_but_a_write_then_its_run_are(run_agent, fake, workspace):
    (workspace / "a.py").write_text("print(1)\n")
    run_agent(reply(call("read_file", path="a.py"), call("write_file", path="a.py", content="print(3)\n")),
              reply(call("write_file", path="a.py", content="print(2)\n"), call("run_shell", command="python3 a.py")),
              answer("It prints 2."))
    assert fake.requests[1]["messages"][-1]["content"] == aids.SKIPPED
    assert fake.requests[2]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\n2\n"


def test_without_text_calls_every_call_of_a_reply_runs(run_agent, fake, workspace):
    run_agent(reply(call("run_shell", command="exit 2"), call("run_shell", command="touch ran")), answer("done"),
              flags=["--plain"])
    assert (workspace / "ran").exists()


def test_an_aid_note_quoting_the_model_cannot_drive_the_terminal(monkeypatch):
    # a note carries words of the model's reply (the file names and commands it recovered); escaped like all printed text
    import io
    from rich.console import Console
    screen = io.StringIO()
    monkeypatch.setattr(screen_module, "console", Console(file=screen, force_terminal=True, width=200))
    logged = []
    aids.note("recovered", "evil\x1b[2J\u202e.py is not there", lambda event, **data: logged.append(data))
    assert "\x1b[2J" not in screen.getvalue() and "\u202e" not in screen.getvalue()
    assert "evil\\x1b[2J\\u202e.py" in screen.getvalue()
    assert logged == [{"kind": "recovered", "text": "evil\x1b[2J\u202e.py is not there"}]  # the transcript keeps it as it was


def test_a_program_ending_in_an_expression_prints_its_value_as_a_notebook_would(run_agent, fake, workspace):
    code, _, _ = run_agent(answer("```python\nrows = [3, 4.5]\nsum(rows)\n```"), answer("7.5"))
    assert code == 0 and results(fake.requests[1])[-1] == "exit code: 0\n--- stdout ---\n7.5\n"
    fake.requests.clear()
    code, _, _ = run_agent(answer("```python\ndef main():\n    print('hi')\nmain()\n```"), answer("ok"))
    assert code == 0 and results(fake.requests[1])[-1] == "exit code: 0\n--- stdout ---\nhi\n"  # None: nothing more


def test_a_plan_written_as_calls_is_cut_at_the_first_step_that_needs_a_result(run_agent, fake, workspace):
    (workspace / "greet.py").write_text("print('hi')\n")
    plan = ('{"name": "read_file", "arguments": {"path": "greet.py"}}\n'
            '{"name": "write_file", "arguments": {"path": "greet.py", "content": "<insert code>"}}\n'
            '{"name": "run_shell", "arguments": {"command": "python3 greet.py"}}')
    code, out, err = run_agent(answer(plan), answer("It prints hi."))
    assert code == 0 and (workspace / "greet.py").read_text() == "print('hi')\n"
    history = fake.requests[1]["messages"][2:]
    assert [c["function"]["name"] for c in history[0]["tool_calls"]] == ["read_file"]  # the rest: dropped, not "not run"
    assert results(fake.requests[1]) == ["print('hi')\n"] and "only the first 1 of them kept" in flat(err)
    # a write, then the command that runs it, is one step; a second command waits for the first's result
    fake.requests.clear()
    pair = ("a.py\n```python\nprint(2)\n```\n```sh\npython3 a.py\n```\n```sh\nrm greet.py\n```")
    run_agent(answer(pair), answer("It prints 2."))
    assert results(fake.requests[1]) == ["wrote 9 bytes (1 lines) to a.py", "exit code: 0\n--- stdout ---\n2\n"]
    assert (workspace / "greet.py").exists()

