"""A scripted stand-in for an OpenAI-compatible chat-completions server, over real HTTP.

Tests point the real `openai` client (inside the real agent) at it. It replays a script of
replies in order and records every request body it receives, so a test can check both what the
agent did and exactly what it sent. A reply is one of:

    answer("text")                         a final answer
    reply(call("run_shell", command="ls")) an assistant message with tool calls
    Status(500, {...})                     an HTTP error with that JSON body
    a function of the request body         returns any of the above (for dynamic scripts)

Left out: streaming, and any real tokenizer (token counts are rough: 4 characters a token).
"""

import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


@dataclass
class Status:
    code: int
    body: dict


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


class FakeServer:
    def __init__(self):
        self.script: list = []
        self.requests: list[dict] = []
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
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                self._send(*server._next(body))

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _next(self, request: dict) -> tuple[int, dict]:
        if not self.script:
            return 500, {"error": {"message": "fake server: the script is exhausted", "type": "test"}}
        step = self.script.pop(0)
        if callable(step):
            step = step(request)
        if isinstance(step, Status):
            return step.code, step.body
        prompt = len(json.dumps(request["messages"])) // 4
        completion = len(json.dumps(step["message"])) // 4
        return 200, {
            "id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 0,
            "model": request.get("model", "fake"),
            "choices": [{"index": 0, **step}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": 0}},
        }

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
