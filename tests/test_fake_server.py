"""tests/fake_server.py streams as llama-server does, checked with the real openai client alone.

The reference for a streamed reply is the same scripted reply sent without streaming: what the
client assembles from the chunks must equal it. The agent is not involved here.

Left out on purpose: comparing against a live llama-server (tests/test_e2e.py runs the agent
against one), and any upper bound on time.
"""

import time

import openai
import pytest

from fake_server import Midstream, Raw, Status, answer, call, reply, sse


@pytest.fixture
def client(fake):
    return openai.OpenAI(base_url=fake.url, api_key="none", max_retries=0)


def ask(client, stream=True, **options):
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                          stream=stream, **options)


def assemble(chunks) -> dict:
    """What a streaming client rebuilds from the deltas: the message, finish reason, usage."""
    message = {"content": "", "reasoning_content": "", "tool_calls": {}}
    finish, usage = None, None
    for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            delta = choice.delta
            message["content"] += delta.content or ""
            message["reasoning_content"] += getattr(delta, "reasoning_content", None) or ""
            for part in delta.tool_calls or []:
                into = message["tool_calls"].setdefault(part.index, {"id": None, "name": "", "arguments": ""})
                into["id"] = part.id or into["id"]
                into["name"] += part.function.name or ""
                into["arguments"] += part.function.arguments or ""
            finish = choice.finish_reason or finish
    return {**message, "finish_reason": finish, "usage": usage}


def test_a_streamed_answer_assembles_to_the_reply_sent_whole(client, fake):
    scripted = reply(content="Paris is the capital of France.", reasoning_content="The user asks a capital.")
    fake.script = [scripted, scripted]
    whole = ask(client, stream=False)
    chunks = list(ask(client))
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    got = assemble(chunks)
    assert got["content"] == whole.choices[0].message.content == "Paris is the capital of France."
    assert got["reasoning_content"] == "The user asks a capital."
    assert got["finish_reason"] == whole.choices[0].finish_reason == "stop"
    assert got["usage"] is None  # not asked for
    # 1 opening + 3 reasoning + 4 content pieces + the finish chunk + [DONE]
    assert fake.streams == [{"chunks": 10, "total": 10, "hung_up": False}]
    assert [request["stream"] for request in fake.requests] == [False, True]


def test_a_streamed_tool_call_arguments_concatenate_to_the_scripted_ones(client, fake):
    first = call("write_file", path="notes/a long name.txt", content='line "one"\nline two\n')
    second = call("read_file", '{"path": "a.txt"')  # malformed text streams as it is
    fake.script = [reply(first, second, content="Writing.")]
    got = assemble(ask(client))
    assert got["content"] == "Writing." and got["finish_reason"] == "tool_calls"
    assert got["tool_calls"] == {
        0: {"id": first["id"], "name": "write_file", "arguments": first["function"]["arguments"]},
        1: {"id": second["id"], "name": "read_file", "arguments": '{"path": "a.txt"'}}


def test_usage_arrives_in_a_last_chunk_of_its_own_when_asked_for(client, fake):
    fake.script = [answer("ok"), answer("ok")]
    whole = ask(client, stream=False)
    chunks = list(ask(client, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert all(chunk.usage is None for chunk in chunks[:-1])
    assert chunks[-2].choices[0].finish_reason == "stop"


def test_timings_ride_on_every_chunk_when_timings_per_token_is_sent(client, fake):
    fake.script = [answer("sixteen chars ok"), answer("no timings")]
    chunks = list(ask(client, stream_options={"include_usage": True}, extra_body={"timings_per_token": True}))
    timings = [chunk.model_extra["timings"] for chunk in chunks]
    assert len(timings) == len(chunks) == 5  # opening, two pieces, finish, usage
    assert [t["predicted_n"] for t in timings] == [0, 1, 2, 2, 2]
    assert all(t["prompt_n"] == chunks[-1].usage.prompt_tokens and t["cache_n"] == 0
               and t["predicted_per_second"] == 100.0 for t in timings)
    assert all("timings" not in chunk.model_extra for chunk in ask(client))


def test_piece_and_delay_are_honoured(client, fake):
    fake.piece, fake.delay = 3, 0.02
    fake.script = [answer("abcdefghij")]
    started = time.perf_counter()
    chunks = list(ask(client))
    elapsed = time.perf_counter() - started
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == ["abc", "def", "ghi", "j"]
    assert fake.streams[-1]["total"] == 7  # opening, four pieces, finish, [DONE]
    assert elapsed >= 6 * 0.02  # a delay before each event after the first


def test_a_client_that_closes_the_stream_early_is_seen_hanging_up(client, fake):
    fake.delay = 0.05
    fake.script = [answer("x" * 2000)]  # 250 pieces: 12 s if the server did not notice
    stream = ask(client)
    for _ in range(3):
        next(stream)
    stream.close()
    deadline = time.monotonic() + 2
    while not (fake.streams and fake.streams[-1]["hung_up"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    [record] = fake.streams
    assert record["hung_up"] and 3 <= record["chunks"] < record["total"] == 253, record


def test_midstream_breaks_a_begun_stream_with_an_api_error(client, fake):
    fake.script = [Midstream({"message": "the model crashed", "type": "server_error"}, after=3),
                   Midstream({"message": "the model crashed"})]
    stream, got = ask(client), []
    with pytest.raises(openai.APIError, match="the model crashed"):
        for chunk in stream:
            got.append(chunk.choices[0].delta.content)
    assert got == ["", "partial ", "partial ", "partial "]
    assert fake.streams == [{"chunks": 5, "total": 5, "hung_up": False}]  # no [DONE] after the error
    with pytest.raises(openai.InternalServerError, match="the model crashed"):  # not streamed: a plain 500
        ask(client, stream=False)


def test_a_status_step_is_a_plain_error_response_even_to_a_streaming_request(client, fake):
    fake.script = [Status(503, {"error": {"message": "loading model"}})]
    with pytest.raises(openai.APIStatusError, match="loading model") as raised:
        ask(client)
    assert raised.value.status_code == 503 and fake.streams == []


def test_a_raw_step_sends_its_bytes_exactly_at_its_boundaries(client, fake):
    parts = sse({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}, "[DONE]")
    fake.script = [Raw([parts[0][:7], parts[0][7:], parts[1]])]  # a chunk cut in two
    assert [c.choices[0].delta.content for c in ask(client)] == ["Hi"]
    assert fake.streams[-1] == {"chunks": 3, "total": 3, "hung_up": False}
    fake.script = [Raw([b"data: {not json\n\n"])]
    with pytest.raises(ValueError):  # the client itself does not read it (endpoint.assemble says so: exit 7)
        list(ask(client))


def test_strict_mode_refuses_fields_openai_does_not_know(client, fake):
    fake.strict = True
    fake.script = [answer("ok"), answer("ok")]
    with pytest.raises(openai.BadRequestError, match="Unrecognized request argument supplied: timings_per_token"):
        ask(client, extra_body={"timings_per_token": True})
    with pytest.raises(openai.BadRequestError, match=r"messages\[0\].reasoning_content"):
        client.chat.completions.create(model="m", messages=[{"role": "assistant", "content": "a",
                                                             "reasoning_content": "b"}])
    assert ask(client, stream=False).choices[0].message.content == "ok"  # the script was not used up
