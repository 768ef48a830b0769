"""A scripted stand-in for an OpenAI-compatible chat-completions server, over real HTTP.

Tests point the real `openai` client (inside the real agent) at it. It replays a script of
replies in order and records every request body it receives, so a test can check both what the
agent did and exactly what it sent. A reply is one of:

    answer("text")                         a final answer
    reply(call("run_shell", command="ls")) an assistant message with tool calls
    Status(500, {...})                     an HTTP error with that JSON body, sent before any
                                           streaming, whatever the request asked for
    Midstream({"message": "..."})          a stream that begins, then breaks off with an error
    Raw(sse(chunk(...), b"data: {not"))   a stream sent byte for byte as given: malformed lines,
                                           bad bytes, chunks no server should send, no [DONE]
    a function of the request body         returns any of the above (for dynamic scripts)

A request with `"stream": true` gets the reply as llama-server streams it: Server-Sent Events,
`data: <json>` each, one chunk per piece of `piece` characters, `delay` seconds apart, then
`data: [DONE]`. The `delta`s of the chunks for reply(call("read_file", path="a.txt"),
content="Let me look.") with piece 8, in order:

    {"role": "assistant", "content": ""}                  every stream opens so
    {"content": "Let me l"}, {"content": "ook."}          after the reasoning_content's, if any
    {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                     "function": {"name": "read_file", "arguments": ""}}]}
    {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}   the arguments, then
    ... ' "a.txt"' and '}' the same way
    {}                                                    with finish_reason "tool_calls"

then, when stream_options.include_usage is set, a chunk with "choices": [] and the usage. With
`"timings_per_token": true` every chunk also carries llama-server's `timings`. `streams` records,
per streamed reply, how many events went out and whether the client hung up first.

With `strict` set, the server is as strict as OpenAI's API: a request field it does not know is
HTTP 400, and (as DeepSeek's) so is `reasoning_content` in a message sent to it.

Left out: any real tokenizer (token counts are rough: 4 characters a token; in `timings` a
streamed piece counts as one predicted token), keep-alive while streaming (closing the
connection ends each stream), streaming fields of a message other than content,
reasoning_content and tool_calls, and streaming a Midstream break to a request that did not ask
to stream (it gets a 500 with the error body instead).
"""

import itertools
import json
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


@dataclass
class Status:
    code: int
    body: dict


@dataclass
class Midstream:
    """A stream that fails after it began: `after` content chunks of "partial ", then
    `data: {"error": body}` and no [DONE] (the openai client raises openai.APIError on it)."""
    body: dict
    after: int = 2


@dataclass
class Raw:
    """A streamed reply sent exactly as `parts` say: each part written and flushed on its own, so
    a test picks the chunk boundaries, `delay` seconds apart. An endless iterable streams until the
    client hangs up."""
    parts: Iterable[bytes]
    delay: float = 0.0


def sse(*events) -> list[bytes]:
    """Events for Raw: a dict as the line `data: <its JSON>` (a blank line after), a str the same
    way as it is, bytes exactly as they are."""
    return [e if isinstance(e, bytes) else f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode()
            for e in events]


def chunk(delta: dict | None = None, finish_reason: str | None = None, **fields) -> dict:
    """One chat.completion.chunk with one choice; `fields` add to it or replace its own."""
    return {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}], **fields}


# What OpenAI's chat completions take (those a test may send); in strict mode anything else is HTTP 400.
KNOWN = {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_completion_tokens", "max_tokens",
         "temperature", "top_p", "seed", "stream", "stream_options", "stop", "n", "response_format", "user"}


def call(name: str, arguments: dict | str | None = None, **kwargs) -> dict:
    """A tool call as the server would send it; `arguments` may be raw (malformed) text."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else kwargs)
    return {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": args}}


def reply(*calls: dict, content: str | None = None, finish_reason: str | None = None, **extra) -> dict:
    message = {"role": "assistant", "content": content, **extra}
    if calls:
        message["tool_calls"] = list(calls)
    return {"message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}


def answer(text: str) -> dict:
    return reply(content=text)


def prompt_tokens(request: dict) -> int:
    return len(json.dumps(request["messages"])) // 4  # rough: 4 characters a token


def pieces(text: str | None, size: int) -> list[str]:
    """pieces("Let me look.", 8) == ["Let me l", "ook."]; nothing for None or ""."""
    text = text or ""
    return [text[i:i + size] for i in range(0, len(text), size)]


def deltas(message: dict, size: int) -> list[dict]:
    """The `delta` of each chunk that streams `message`, in llama-server's order."""
    out = [{"role": "assistant", "content": ""}]
    out += [{"reasoning_content": piece} for piece in pieces(message.get("reasoning_content"), size)]
    out += [{"content": piece} for piece in pieces(message.get("content"), size)]
    for i, tool_call in enumerate(message.get("tool_calls") or []):
        function = tool_call["function"]
        out.append({"tool_calls": [{"index": i, "id": tool_call["id"], "type": "function",
                                    "function": {"name": function["name"], "arguments": ""}}]})
        out += [{"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
                for piece in pieces(function["arguments"], size)]
    return out


class FakeServer:
    piece = 8  # characters of text per streamed chunk
    delay = 0.0  # seconds between streamed chunks
    strict = False  # answer HTTP 400 to fields OpenAI does not know, and to reasoning_content in a message

    def __init__(self):
        self.script: list = []
        self.requests: list[dict] = []
        # per streamed reply: {"chunks": sent, "total": planned (None: an endless Raw), "hung_up": bool}
        self.streams: list[dict] = []
        self.gets: list[str] = []  # paths of GET requests (the agent's start-up check)
        self.extra_routes: dict[str, tuple[int, dict]] = {}  # GET path -> (status, JSON body)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the client reuses one connection
            disable_nagle_algorithm = True  # else each reply waits ~40 ms for a delayed ACK

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.gets.append(self.path)
                status, body = server.extra_routes.get(self.path, (404, {"error": "not found"}))
                self._send(status, body)

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(request)
                if server.strict and (unknown := server._unknown(request)):
                    return self._send(400, {"error": {"message": f"Unrecognized request argument supplied: {unknown}",
                                                      "type": "invalid_request_error", "param": unknown, "code": None}})
                step = server._next(request)
                if isinstance(step, Raw):
                    self._stream(step.parts, step.delay)
                elif isinstance(step, Status):
                    self._send(step.code, step.body)
                elif request.get("stream"):
                    events = server._events(request, step)
                    self._stream([f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events],
                                 server.delay)
                elif isinstance(step, Midstream):
                    self._send(500, {"error": step.body})
                else:
                    self._send(200, server._completion(request, step))

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: Iterable[bytes], delay: float):
                """Write each event and flush it, until done or the client hangs up. With no
                Content-Length, the closed connection is what ends the body."""
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                record = {"chunks": 0, "total": len(events) if isinstance(events, list) else None, "hung_up": False}
                server.streams.append(record)
                for i, event in enumerate(events):
                    if i and delay:
                        time.sleep(delay)
                    # subtle: counted before the write, so that once the client has read [DONE]
                    # the record is already complete; taken back if the write fails.
                    record["chunks"] += 1
                    try:
                        self.wfile.write(event)
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        record["chunks"] -= 1
                        record["hung_up"] = True
                        return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _next(self, request: dict) -> Status | Midstream | dict:
        if not self.script:
            return Status(500, {"error": {"message": "fake server: the script is exhausted", "type": "test"}})
        step = self.script.pop(0)
        return step(request) if callable(step) else step

    def _unknown(self, request: dict) -> str | None:
        """The first field a strict server refuses: one it does not know, or a message's reasoning_content."""
        fields = [k for k in request if k not in KNOWN]
        fields += [f"messages[{i}].reasoning_content" for i, m in enumerate(request.get("messages", []))
                   if "reasoning_content" in m]
        return fields[0] if fields else None

    def _usage(self, request: dict, message: dict) -> dict:
        prompt = prompt_tokens(request)
        completion = len(json.dumps(message)) // 4
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": 0}}

    def _completion(self, request: dict, step: dict) -> dict:
        return {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 0,
                "model": request.get("model", "fake"), "choices": [{"index": 0, **step}],
                "usage": self._usage(request, step["message"])}

    def _events(self, request: dict, step: Midstream | dict) -> list:
        """Every data event of a streamed reply, in order: chunk dicts, then "[DONE]" (or, for a
        Midstream, the error event instead)."""
        head = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion.chunk", "created": 0,
                "model": request.get("model", "fake")}
        broken = isinstance(step, Midstream)
        if broken:
            sent = [{"role": "assistant", "content": ""}] + [{"content": "partial "}] * step.after
        else:
            sent = deltas(step["message"], self.piece)
        chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in sent]
        if not broken:
            chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": step["finish_reason"]}]})
            if (request.get("stream_options") or {}).get("include_usage"):
                chunks.append({**head, "choices": [], "usage": self._usage(request, step["message"])})
        if request.get("timings_per_token"):
            prompt = prompt_tokens(request)
            for n, chunk in enumerate(chunks):  # the opening chunk predicts nothing; each piece is a token
                chunk["timings"] = {"cache_n": 0, "prompt_n": prompt, "predicted_n": min(n, len(sent) - 1),
                                    "predicted_per_second": 100.0}
        return chunks + [{"error": step.body} if broken else "[DONE]"]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def interrupted(proc: subprocess.Popen, ready) -> tuple[int, str | bytes, str | bytes]:
    """Ctrl-C the agent `proc` once `ready()` says it is where the test wants it (30 s at most);
    (exit code, stdout, stderr)."""
    deadline = time.monotonic() + 30
    while not ready() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def running(pattern: str):
    """ready() for interrupted: a process whose command line holds `pattern` runs."""
    return lambda: bool(subprocess.run(["pgrep", "-f", pattern], capture_output=True).stdout)
