"""The endpoint: one streamed chat-completions call to an OpenAI-compatible server, and what can go wrong.

`sender(base_url, ...)` returns `send(request, show, stop)`: it posts one request through the openai
client (its retries, timeouts and proxy support), reads the streamed reply with `assemble`, which
checks every field a server sends before using it, and sorts failures into what the agent can
handle (ContextOverflow: compact and retry; ParserError: ask again) and what only the user can
fix (Exit: exit 1 when the endpoint fails, exit 7 when its reply is unusable). `check_endpoint` is
the start-up probe (llama-server's GET /props: is it there, how large is its context).

Left out on purpose: several choices per reply (n > 1), a server's non-streamed reply, and
tokenizing on our side (the server counts tokens; its count is read, never estimated here).
"""

import json
import math
import re
import time

import openai
from openai.types.chat import ChatCompletion

from screen import console, printable
from transcript import listed, shown

EXTRAS = ("timings_per_token",)  # llama-server's own request fields, sent through the client's extra_body
MAX_REPLY_TOKENS = 1024  # one reply: a small file in a write_file call fits; a longer reply is rambling
# What the client reads of one reply, whatever the server does with max_completion_tokens: 1024
# tokens are 4-20 kB of text, and on two CPU cores a long prompt takes minutes before the first token.
REPLY_CHARS = 100_000
REPLY_SECONDS = 1200
UNREACHABLE = ("error: cannot reach the model endpoint at {url} ({error}). Is the server running? Start one with "
               "scripts/serve.py, or point --base-url / OPENAI_BASE_URL at another.")


class Exit(Exception):
    """The run cannot go on: Exit(exit code, a message that says why and what to do)."""


class ContextOverflow(Exception):
    """The request is larger than the server's context window: (prompt tokens, context size)."""


class ParserError(Exception):
    """The server could not parse the model's reply as a tool call (llama-server: HTTP 500)."""


class BadReply(Exception):
    """The server's reply cannot be used: not a stream as the API describes one, or past a reply
    limit. The text says what was wrong, to follow "the reply from <endpoint> ..."."""


BYTES_PER_CHAR = 1000  # what a reply of N characters may take on the wire: N tokens of verbose chunks, and more


def byte_capped(stream, most: int):
    """The response body `stream`, ending with BadReply past `most` bytes: the client reads a stream
    by lines, so a line that never ends would otherwise grow in memory until the time limit."""
    base = next(kind for kind in type(stream).__mro__ if kind.__name__ == "SyncByteStream")  # httpx's or httpx2's

    class Capped(base):
        def __iter__(self):
            read = 0
            for piece in stream:
                read += len(piece)
                if read > most:
                    raise BadReply(f"went past {most:,} bytes ({BYTES_PER_CHAR} per character of --reply-chars); "
                                   "the rest was not read")
                yield piece

        def close(self):
            stream.close()
    return Capped()


# How servers word "the prompt is larger than the context": llama-server (its error type),
# OpenAI (its code) and vLLM (the message); the numbers, where the message gives them, guide compaction.
OVERFLOW = re.compile(r"exceed_context|context_length_exceeded|maximum context length", re.I)
CONTEXT_SIZE = re.compile(r"maximum context length is (\d+)")
PROMPT_SIZE = re.compile(r"(?:resulted in|requested|you have) (\d+)")


def sender(base_url: str, api_key: str, reply_seconds: float = REPLY_SECONDS, reply_chars: int = REPLY_CHARS,
           retries: int = 3):
    """send(request) against a real endpoint, through the openai client: it retries a dropped
    connection, 429 and 5xx with backoff, honours HTTPS_PROXY, and gives typed errors, which are
    sorted here into what the harness can handle (overflow, parser error) and what only the user
    can fix (Exit: exit 1 when the endpoint fails, exit 7 when its reply is unusable).

    One reply may take `reply_seconds` in all (the client also gives up on a server silent for that
    long, or 600 s at most) and hold `reply_chars` characters: a server that streams forever is cut off."""
    def once(response):  # subtle: llama-server's 500 is a reply that failed to parse; the same request
        if response.status_code == 500:  # (same seed) fails the same way, so it is not resent as is
            response.headers["x-should-retry"] = "false"
        response.stream = byte_capped(response.stream, BYTES_PER_CHAR * reply_chars)
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=min(600, reply_seconds), max_retries=retries,
                           http_client=openai.DefaultHttpxClient(event_hooks={"response": [once]}))
    url = shown(base_url)

    def send(request: dict, show=lambda kind, piece: None, stop=lambda text: None) -> ChatCompletion:
        deadline, began = time.monotonic() + reply_seconds, False
        try:
            stream = client.chat.completions.create(**{k: v for k, v in request.items() if k not in EXTRAS},
                                                    extra_body={k: request[k] for k in EXTRAS if k in request})
            began = True
            return assemble(stream, show, stop, deadline, reply_chars)
        except BadReply as error:
            raise Exit(7, f"error: the reply from the model endpoint at {url} {error}") from None
        except openai.APITimeoutError:  # the server went silent: before its reply began, or in the middle
            when = "in the middle of its reply" if began else "before replying"
            raise Exit(1, f"error: the model endpoint at {url} sent nothing for {min(600, reply_seconds):g} s "
                          f"{when}; if it is only slow, raise --reply-seconds") from None
        except openai.APIConnectionError as error:
            if began:
                raise Exit(1, f"error: the connection to the model endpoint at {url} broke in the middle of "
                              f"its reply ({error.__cause__ or error})") from None
            raise Exit(1, UNREACHABLE.format(url=url, error=error.__cause__ or error)) from None
        except openai.APIError as error:  # an HTTP error status, or an error sent inside the stream
            status = getattr(error, "status_code", 500)
            body = error.body if isinstance(error.body, dict) else {}
            details = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
            message = str(details.get("message") or error.message)
            if status == 400 and OVERFLOW.search(f"{details.get('type')} {details.get('code')} {message}"):
                n_ctx, prompt = CONTEXT_SIZE.search(message), PROMPT_SIZE.search(message)
                raise ContextOverflow(token_count(details.get("n_prompt_tokens")) or (prompt and int(prompt[1])),
                                      token_count(details.get("n_ctx")) or (n_ctx and int(n_ctx[1]))) from None
            if status == 500 and re.search(r"does not match|pars(e|ing)", message, re.I):
                raise ParserError(message) from None
            raise Exit(1, f"error: the model endpoint at {url} answered HTTP {status}: {message}") from None

    return send


FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")  # what ChatCompletion takes


def assemble(stream, show, stop, deadline: float = math.inf, most: int = REPLY_CHARS) -> ChatCompletion:
    """A streamed reply, put together as the whole reply would have come. `show(kind, piece)`
    shows each piece as it arrives; `stop(text)` says how much of the text so far to keep when it
    holds a complete call written as text (the text-calls aid), else None. Then the stream is
    closed, and llama-server stops generating: the explanation a small model writes after its call
    costs nothing and is never in the history. (A structured call needs no such stop: with
    parallel_tool_calls off the server ends the reply after it.)

    Every server's quirks arrive here, so each chunk is read as the plain JSON it was, and every
    field is checked before it is used. What the reply can do without is let go: a `usage` or
    `timings` that is not numbers, an unknown finish_reason (read as "stop"), a field of the wrong
    type. Tool-call pieces are matched to calls by their `index` and, where a server reuses an
    index, by a new `id`; arguments sent as a JSON object are written back as its text. A stream
    that is no JSON, no UTF-8 or no objects, or that runs past `deadline` (time.monotonic) or
    `most` characters, raises BadReply.

    Why not the openai client's own accumulator (openai.lib.streaming.chat.ChatCompletionStreamState):
    measured (openai 3.63) on the quirks above, it merges two calls sent with index 0 into one
    (`read_fileread_file`), raises IndexError on a call whose first index is 1 and TypeError on
    `"choices": null`, keeps arguments sent as an object as a dict, and its final completion raises
    on a reply cut off at the token limit; checking each field here is shorter than repairing it.

    Left out: several choices (n > 1; only the first is read) and one SSE line that never ends
    (the client reads a line whole before this sees it)."""
    text, reasoning, calls, finish, usage, timings, keep, head, size = "", "", [], None, None, {}, None, None, 0
    with stream:
        try:
            for chunk in stream:
                chunk = chunk.to_dict(warnings=False) if isinstance(chunk, openai.BaseModel) else chunk
                if not isinstance(chunk, dict):
                    raise BadReply(f"holds an event that is no JSON object ({printable(repr(chunk))[:80]})")
                head, usage = chunk if head is None else head, token_usage(chunk.get("usage")) or usage
                timings = finite_numbers(chunk.get("timings")) or timings
                for choice in [c for c in listed(chunk.get("choices")) if isinstance(c, dict)][:1]:
                    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
                    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else finish
                    if isinstance(piece := replace_lone_surrogates(delta.get("reasoning_content")), str) and piece:
                        reasoning, size = reasoning + piece, size + len(piece)
                        show("reasoning", piece)
                    if isinstance(piece := replace_lone_surrogates(delta.get("content")), str) and piece:
                        text, size = text + piece, size + len(piece)
                        show("content", piece)
                        keep = stop(text)
                    size += sum(add_piece(calls, part) for part in listed(delta.get("tool_calls")))
                if size > most:
                    raise BadReply(f"went past {most} characters (--reply-chars); the rest was not read")
                if time.monotonic() > deadline:
                    raise BadReply("took longer than one reply may (--reply-seconds); the rest was not read")
                if keep is not None:  # the text worth keeping ends there; the rest is never generated
                    break
        except (ValueError, RecursionError) as error:  # no JSON or no UTF-8 (ValueErrors both), or nested too deep
            raise BadReply(f"is no stream of chunks as the API describes ({printable(str(error))[:200]})") from None
    if head is None:  # (a body that is no event stream at all, as a server that ignores "stream" sends)
        raise BadReply("ended before its first chunk: it is no chat-completions stream")
    if keep is not None:  # (a reply the server ended in that very chunk keeps its reason: it may be cut off)
        text, finish = text[:keep], finish or "stop"
    if usage is None and "predicted_n" in timings:  # stopped before the usage chunk: llama-server's timings say it
        prompt, predicted = int(timings.get("prompt_n", 0) + timings.get("cache_n", 0)), int(timings["predicted_n"])
        usage = {"prompt_tokens": prompt, "completion_tokens": predicted, "total_tokens": prompt + predicted,
                 "prompt_tokens_details": {"cached_tokens": int(timings.get("cache_n", 0))}}
    message = {"role": "assistant", "content": text, "tool_calls": with_unique_ids(calls) or None,
               "reasoning_content": reasoning or None}
    return ChatCompletion.model_validate({
        **({"timings": timings} if timings else {}), **({"stopped_after_call": True} if keep is not None else {}),
        "id": str(head.get("id") or ""), "object": "chat.completion", "model": str(head.get("model") or ""),
        "created": head.get("created") if type(head.get("created")) is int else 0, "usage": usage,
        "choices": [{"index": 0, "message": message, "finish_reason": finish if finish in FINISH_REASONS else "stop"}]})


def add_piece(calls: list, part) -> int:
    """Add one streamed piece of a tool call to `calls`; returns how many characters it added.

    A piece belongs to the call with its `index` (the last call, when it has none), unless it
    brings an `id` other than that call's: then it opens a new call (a server that numbers every
    call 0). Arguments sent as a JSON object rather than its text are written back as text."""
    if not isinstance(part, dict):
        return 0
    function = part.get("function") if isinstance(part.get("function"), dict) else {}
    index = part.get("index") if type(part.get("index")) is int else (calls[-1]["index"] if calls else 0)
    given = replace_lone_surrogates(part.get("id")) if isinstance(part.get("id"), str) and part.get("id") else None
    into = next((call for call in reversed(calls) if call["index"] == index), None)
    if into is None or (given and into["id"] and given != into["id"]):
        into = {"index": index, "id": None, "name": "", "arguments": ""}
        calls.append(into)
    name, arguments = function.get("name"), function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    name = replace_lone_surrogates(name) if isinstance(name, str) else ""
    arguments = replace_lone_surrogates(arguments) or ""
    into["id"], into["name"] = into["id"] or given, into["name"] + name
    into["arguments"] += arguments
    return len(name) + len(arguments)


def with_unique_ids(calls: list) -> list[dict]:
    """The assembled calls as the API writes them, each with an id of its own (one made up where
    the server sent none, or one it had used already), so each result is matched to one call."""
    out, used = [], set()
    for n, call in enumerate(calls):
        call_id = call["id"] if call["id"] and call["id"] not in used else f"call_{n}"
        while call_id in used:
            call_id += "_"
        used.add(call_id)
        out.append({"id": call_id, "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]}})
    return out


LONE = re.compile("[\ud800-\udfff]")  # (JSON reads a proper pair as one character: what is left is alone)


def replace_lone_surrogates(value):
    """A string from the server with each lone surrogate ("\\ud800", which JSON allows and UTF-8
    cannot encode) as U+FFFD: sent back in the history, it would make the next request unencodable."""
    return LONE.sub("\ufffd", value) if isinstance(value, str) else value


def token_count(value) -> int | None:
    """A count of tokens from the server, if it is one (a whole number above 0)."""
    return value if type(value) is int and value > 0 else None


def finite_numbers(value) -> dict:
    """The finite numbers in a dict (llama-server's `timings`); {} for anything else."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if type(v) in (int, float) and math.isfinite(v)}


def token_usage(usage) -> dict | None:
    """`usage` when it counts tokens in whole numbers, as the API says; else None (it is only shown)."""
    if not isinstance(usage, dict) or {type(usage.get("prompt_tokens")), type(usage.get("completion_tokens"))} != {int}:
        return None  # (a bool is no count either)
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
            "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": cached} if type(cached) is int else None}


def check_endpoint(base_url: str, api_key: str) -> int | None:
    """Start-up probe: is the server there, and (llama-server only) how large is its context (the
    result) and can its chat template do tools? One GET, through the openai client as the chat
    requests go (user:password@ too); a plain OpenAI-compatible server answers 404: None."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        props = openai.OpenAI(base_url=root, api_key=api_key, timeout=10, max_retries=0).get("/props", cast_to=object)
        n_ctx = props.get("default_generation_settings", {}).get("n_ctx")
        tools_ok = props.get("chat_template_caps", {}).get("supports_tool_calls")
    except (openai.APIStatusError, ValueError, AttributeError):
        return None  # the server is there, but is not llama-server
    except openai.APITimeoutError:
        raise Exit(1, f"error: the model endpoint at {shown(base_url)} did not answer GET /props "
                      "within 10 s (--no-probe skips it)") from None
    except openai.APIConnectionError as error:
        raise Exit(1, UNREACHABLE.format(url=shown(base_url), error=error.__cause__ or error)) from None
    if tools_ok is False:
        console.print("warning: the server's chat template does not support tool calls; calls "
                      "will arrive as text (recovered where possible)", style="yellow")
    n_ctx = token_count(n_ctx)
    if n_ctx and n_ctx < 4 * MAX_REPLY_TOKENS:
        console.print(f"warning: the server's context is only {n_ctx} tokens; long runs will be "
                      "compacted (start llama-server with a larger -c)", style="yellow")
    return n_ctx

