"""--render of a transcript someone else made: no field of it reaches the terminal as an escape
sequence. The crafted transcript holds a clipboard write (OSC 52), a screen clear (CSI 2J) and a
hidden hyperlink (OSC 8, and rich's own [link] markup) in every field render prints; the real
agent renders it on a real terminal (a pty), and only rich's own colours come out."""

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

AGENT = [sys.executable, str(Path(__file__).resolve().parent.parent / "agent.py")]
EVIL = ("\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ "
        "\x9b2J [link=https://evil.example/]here[/link] [click](https://evil.example/)")
COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # SGR: what rich itself prints for styles


def crafted() -> list[dict]:
    arguments = json.dumps({"path": EVIL, "command": EVIL, "content": EVIL, "old": EVIL})
    message = {"role": "assistant", "content": EVIL, "reasoning_content": EVIL,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": EVIL, "arguments": arguments}}]}
    response = {"id": "r", "object": "chat.completion", "created": 0, "model": EVIL,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "timings": {"x": EVIL}}
    change = {"path": EVIL, "kind": "created", "added": 1, "removed": 0}
    return [{"event": "start", "task": EVIL, "config": {"n_ctx": EVIL, "max_turns": EVIL, "model": EVIL}},
            {"event": "response", "turn": 1, "body": response, "seconds": 1.0},
            {"event": "tool", "turn": 1, "id": "c1", "name": EVIL, "arguments": arguments, "result": EVIL},
            {"event": "tool", "turn": 1, "id": "c2", "name": "write_file", "arguments": arguments, "result": EVIL},
            {"event": "check", "command": EVIL, "result": EVIL, "passed": True, "exit_code": 0},
            {"event": "note", "kind": EVIL, "text": EVIL},
            {"event": "changes", "landed": [change, {**change, "kind": EVIL}, EVIL], "refused": [EVIL, f"a: {EVIL}", 3],
             "where": EVIL},
            {"event": "end", "exit_code": 0, "answer": EVIL, "meaning": EVIL}]


def on_a_terminal(argv: list[str]) -> tuple[int, str]:
    """Run argv with a pty as its terminal (stdin, stdout, stderr): (exit code, all it printed)."""
    main, other = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    process = subprocess.Popen(argv, stdin=other, stdout=other, stderr=other, env={**env, "TERM": "xterm-256color"})
    os.close(other)
    out = b""
    while True:
        try:
            piece = os.read(main, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not piece:
            break
        out += piece
    os.close(main)
    return process.wait(), out.decode("utf-8", "replace")


def test_render_puts_no_escape_sequence_of_a_transcript_on_the_terminal(tmp_path):
    path = tmp_path / "crafted.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in crafted()))
    code, shown = on_a_terminal([*AGENT, "--render", str(path)])
    assert code == 0, shown
    assert "click" in shown and "here" in shown  # every field was shown, as text
    assert "\x1b" not in COLOURS.sub("", shown) and "\x9b" not in shown and "\x07" not in shown
