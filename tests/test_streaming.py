"""Every reply streams: its text is on screen as it arrives, and a reply that has written its
command or read as text (the text-calls aid) is stopped there, so the server never generates the
explanation that follows. Driven through cli.main against tests/fake_server.py, which streams
the way llama-server does (Server-Sent Events, one piece of text a chunk, per-chunk timings) and
records, for each streamed reply, how many chunks it sent before the client hung up."""

import json
import time

import pytest

import screen
from fake_server import Midstream, answer


CALL = '```json\n{"name": "run_shell", "arguments": {"command": "echo hi"}}\n```'
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 8192}, "chat_template_caps": {"supports_tool_calls": True}}
EXPLANATION = "\n\n### Explanation\n" + "This command prints hi, which shows the shell works. " * 40


class Clock:
    """A file for the screen's console that notes when each piece of text was written."""

    def __init__(self):
        self.writes = []

    def write(self, text):
        self.writes.append((time.monotonic(), text))

    def flush(self):
        pass


def test_the_text_is_on_screen_before_the_reply_ends(run_agent, fake, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(screen.console, "_file", clock)  # (None again afterwards: sys.stderr at each print)
    fake.delay, fake.piece = 0.04, 8
    words = "".join(f"word{i:03d} " for i in range(60))  # 480 characters: 60 chunks, ~2.4 s
    code, out, _ = run_agent(answer(words), flags=["--plain"])
    assert code == 0 and out == words + "\n"
    shown = [(t, text) for t, text in clock.writes if "word" in text and len(text) < 40]  # the streamed pieces
    first = next(t for t, text in shown if "word000" in text)
    last = next(t for t, text in shown if "word059" in text)
    assert last - first > 1.5  # the first piece was on screen while the rest was still being generated


def test_a_reply_is_stopped_once_its_command_is_complete(run_agent, fake):
    fake.delay, fake.piece = 0.01, 8
    code, _, err = run_agent(answer(CALL + EXPLANATION), answer("It printed hi."))
    assert code == 0
    stream = fake.streams[0]
    assert stream["hung_up"]
    call_chunks = -(-len(CALL) // 8)
    assert stream["chunks"] <= call_chunks + 4 < stream["total"] - 100  # the call, not the explanation
    assistant, result = fake.requests[1]["messages"][2:4]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"command": "echo hi"}
    assert "Explanation" not in json.dumps(fake.requests[1])  # never generated, so never in the history
    assert result["content"] == "exit code: 0\n--- stdout ---\nhi\n"
    assert "generation stopped" in err


def test_a_reply_that_imagines_the_result_of_its_call_is_stopped_there(run_agent, fake, workspace):
    fake.delay, fake.piece = 0.01, 8
    made_up = "\n<tool_response>\nexit code: 0\n--- stdout ---\n" + "[123, 456, 789] " * 60
    code, out, _ = run_agent(answer(CALL + made_up), answer("It printed hi."))
    assert code == 0 and out == "It printed hi.\n"
    assert fake.streams[0]["hung_up"] and fake.streams[0]["chunks"] < fake.streams[0]["total"] - 100
    assert fake.requests[1]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\nhi\n"  # the call ran
    assert "tool_response" not in json.dumps(fake.requests[1]) and "[123, 456" not in json.dumps(fake.requests[1])
    # with no call before it, the reply is left alone: it is the model's answer, as in the plain loop
    fake.requests.clear()
    code, out, _ = run_agent(answer("Here's how:\n" + made_up), answer("never asked"))
    assert code == 0 and out == "Here's how:\n" + made_up + "\n" and not fake.streams[-1]["hung_up"]


def test_a_tool_response_copied_into_a_write_is_not_stopped_and_is_written_without_its_wrapper(run_agent, fake, workspace):
    # seen from the 1.5B model: helpers.py read, then written under its new name with the
    # template's wrapper copied around it, the reply ending at the closing tag
    source = '"""Formatting helpers."""\n\n\ndef fmt(x):\n    return f"{x:.2f}"\n'
    (workspace / "helpers.py").write_text(source)
    fake.delay, fake.piece = 0.01, 8
    copy = '{"name": "write_file", "arguments": {"path": "formatting.py", "content": """<tool_response>\n' + source + "\n</tool_response>"
    code, _, _ = run_agent(answer('```json\n{"name": "read_file", "arguments": {"path": "helpers.py"}}\n```'),
                           answer(copy), answer("Done."))
    assert code == 0 and not fake.streams[1]["hung_up"]  # a tag in the middle of a line is no imagined result
    assert (workspace / "formatting.py").read_text() == source
    assert fake.requests[2]["messages"][-1]["content"].startswith("wrote")


def test_a_call_in_any_closed_tag_stops_the_reply_and_its_repeats_are_never_generated(run_agent, fake):
    fake.delay, fake.piece = 0.01, 8
    block = '<tools>\n    {"name": "run_shell", "arguments": {"command": "echo hi"}}\n</tools>\n\n'
    code, _, _ = run_agent(answer(block * 30), answer("It printed hi."))
    assert code == 0 and fake.streams[0]["hung_up"]
    assert fake.streams[0]["chunks"] <= -(-len(block) // 8) + 4 < fake.streams[0]["total"] - 100


def test_under_plain_the_same_reply_streams_to_its_end(run_agent, fake):
    code, out, err = run_agent(answer(CALL + EXPLANATION), flags=["--plain"])
    assert code == 0 and "Explanation" in out  # the article's loop: the text is the answer
    assert fake.streams[0]["chunks"] == fake.streams[0]["total"] and not fake.streams[0]["hung_up"]
    assert "generation stopped" not in err


def test_a_file_written_as_a_block_does_not_stop_the_reply(run_agent, fake, workspace):
    # the command that runs it often follows in the same reply: both run, in order
    fake.delay = 0.01
    # (nor does the command block: only the rest of the reply says whether it is meant or advice)
    text = "Create `hi.py`:\n```python\nprint('hi')\n```\nThen run:\n```sh\npython3 hi.py\n```"
    code, _, _ = run_agent(answer(text), answer("done"))
    assert code == 0 and (workspace / "hi.py").read_text() == "print('hi')\n"
    assert not fake.streams[0]["hung_up"]
    assert fake.requests[1]["messages"][-1]["content"] == "exit code: 0\n--- stdout ---\nhi\n"


def test_a_stopped_reply_still_counts_its_tokens_from_the_timings(run_agent, fake):
    fake.delay = 0.01
    fake.extra_routes["/props"] = (200, LLAMA_PROPS)  # llama-server: asked for its timings
    code, _, err = run_agent(answer(CALL + EXPLANATION), answer("ok"))
    assert code == 0 and fake.streams[0]["hung_up"]  # so no usage chunk came
    turn_one = next(line for line in err.splitlines() if line.startswith("turn 1/"))
    assert "context ?" not in turn_one and "out ?" not in turn_one  # usage built from the last chunk's timings


@pytest.mark.parametrize("message, code", [
    ("Failed to parse input: the output does not match the tool-call format", 0),  # one corrective note, then on
    ("slot unavailable", 1),
])
def test_an_error_inside_the_stream_is_sorted_like_an_http_error(run_agent, fake, message, code):
    got, _, err = run_agent(Midstream({"message": message, "type": "server_error"}), answer("fine"), flags=["--plain"])
    assert got == code
    assert "Traceback" not in err
    if code == 1:
        assert f"answered HTTP 500: {message}" in err
