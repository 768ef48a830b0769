"""Transcripts: one JSON line per event of a run, written as it happens; and their replay.

A run's events, in order:

    {"event": "start", "task": ..., "config": {...}, "time": ...}     config has no API key, and
        its base_url no user:password (transcript.shown)
    {"event": "request", "turn": 1, "body": {...}}                     exactly what was sent
    {"event": "request", "turn": 2, "body": {...}, "after": 3}         the same, when the messages
        are the previous request's with more appended: `body.messages` holds only the new ones,
        after the first `after` (read() puts the whole list back), so a long run's transcript
        grows with the conversation, not with its square
    {"event": "response", "turn": 1, "body": {...}, "seconds": ...}    exactly what came back
    {"event": "tool", "turn": 1, "id": ..., "name": ..., "arguments": ..., "result": ...}
    {"event": "note", "kind": "recovered" | "compacted" | ..., "text": ...}
    {"event": "note", "kind": "attempt", "n": 2, "workspace": ...}     with --check: an attempt begins
    {"event": "changes", "landed": [...], "refused": [...], "where": ...}   the change set that
        landed on the workspace (each change's path, kind and line counts), what did not, and why
    {"event": "removed", "removed": [...]}                             what the harness removed
        after commands (files planted for host tools, setuid bits), when there was any
    {"event": "end", "exit_code": 0, "answer": ..., "totals": {...}}

Every event of an attempt (request, response, tool, check, note) also carries "attempt": n, and
its "turn" counts that attempt's model calls; start, changes, removed and end are the run's.

Each line is flushed before the run goes on, so a crash or Ctrl-C loses nothing already done,
and every string in it passes the secret filter first (redact.py), so the API key, the base
URL's password and any credential a tool showed never land here. A name already taken by anything but a regular
file (a link, a FIFO planted by a command in an earlier run) is refused: writer raises OSError.

Left out on purpose: rotation, compression, and any index across runs (a folder of .jsonl files
and `grep` are enough).
"""

import json
import os
import re
import stat
import time
import urllib.parse
from pathlib import Path

from openai.types.chat import ChatCompletion

from redact import everywhere


# What str.splitlines() takes for a line break and JSON leaves as it is (it escapes all below U+0020)
BREAKS = re.compile("[\x85\u2028\u2029]")


def fresh(folder: Path) -> Path:
    """A new transcript's name in `folder`: the time and a random part, so two runs started in
    the same second get two files (and writer(..., exclusive=True) refuses a name taken anyway)."""
    return folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.jsonl"


def writer(path: Path, secrets: list[str], exclusive: bool = False):
    """A log(event, **data) function appending to `path` (creating it; with `exclusive`, only a
    new file: never one another run writes to); log.close() ends it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # subtle: the shell may have planted .tooloop (or names in it) as symlinks to host files in an
    # earlier run; never write through a link
    if path.parent.is_symlink():
        raise OSError(f"{path.parent} is a symlink")
    nofollow = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW
    if path.parent.name == ".tooloop":  # the folder keeps itself out of git
        try:
            os.close(os.open(path.parent / ".gitignore", nofollow | os.O_EXCL, 0o644))
            (path.parent / ".gitignore").write_text("*\n")
        except FileExistsError:
            pass
    # O_NONBLOCK: opening a FIFO planted under the name must not hang the run (it is refused just
    # below; on a regular file the flag changes nothing)
    fd = os.open(path, nofollow | os.O_APPEND | os.O_NONBLOCK | (os.O_EXCL if exclusive else 0), 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    # subtle: text may hold a lone surrogate ("\ud800": bytes read from a transcript, a path or the
    # environment that are no UTF-8), which UTF-8 cannot encode. In the JSON below one can only
    # stand inside a string, where backslashreplace writes it as the very escape JSON reads back:
    # the line stays valid and read() returns the text as it was.
    file = os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")

    previous = []  # the messages of the last request logged

    def log(event: str, **data) -> None:
        nonlocal previous
        if event == "request":
            messages = data["body"]["messages"]
            if previous and messages[:len(previous)] == previous:
                data = {**data, "body": {**data["body"], "messages": messages[len(previous):]}, "after": len(previous)}
            previous = list(messages)
        data = everywhere(data, secrets)  # every string, before JSON escapes it
        line = json.dumps({"event": event, "time": round(time.time(), 3), **data}, ensure_ascii=False)
        line = BREAKS.sub(lambda m: f"\\u{ord(m[0]):04x}", line)  # one event, one line, whoever splits them
        file.write(line + "\n")
        file.flush()

    log.close = file.close
    return log


def shown(url: str) -> str:
    """`url` fit to print and record: any user:password@ in it becomes ***@.

        >>> shown("http://me:hunter22@host:8080/v1")
        'http://***@host:8080/v1'
    """
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


# What each kind of event must hold, and of which type, for render and replay to use it.
FIELDS = {"start": {"task": str, "config": dict}, "request": {"turn": int, "body": dict},
          "response": {"turn": int, "body": dict, "seconds": (int, float)},
          "tool": {"name": str, "arguments": str, "result": str},
          "check": {"command": str, "result": str, "passed": bool}, "note": {"kind": str, "text": str},
          "removed": {"removed": list}, "changes": {"landed": list, "refused": list, "where": str},
          "end": {"exit_code": int, "answer": str}}


class NotATranscript(ValueError):
    """The file is not a tooloop transcript (or not a whole one): says which line, and why."""


def read(path: Path) -> list[dict]:
    """The events of a transcript, as written; a line that is no JSON object (one cut short by a
    crash) is skipped. Nothing else is checked: checked() is for files a user names."""
    events, messages = [], []
    for line in Path(path).read_text(encoding="utf-8").split("\n"):  # (not splitlines: U+2028 is no line break here)
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        if event.get("event") == "request" and isinstance(event.get("body"), dict):
            after = event.pop("after", 0)
            messages = messages[:after if type(after) is int else 0] + listed(event["body"].get("messages"))
            event["body"]["messages"] = messages
        events.append(event)
    return events


def checked(path: Path) -> list[dict]:
    """The events of a transcript a user named (--render, --replay), each with what its kind needs
    (FIELDS) and each response as a chat completion, or NotATranscript saying why the file is none:
    which line, or that it has no start event."""
    try:
        events = read(path)
    except (OSError, UnicodeDecodeError) as error:
        raise NotATranscript(f"cannot be read ({error})") from None
    for n, event in enumerate(events, 1):
        if problem := malformed(event):
            raise NotATranscript(f"event {n} is no tooloop event: {problem}")
        if event["event"] == "response":  # as the model's reply reads it: what render and replay rely on
            event["body"] = ChatCompletion.model_validate(event["body"]).model_dump(exclude_none=True)
    if not any(event["event"] == "start" for event in events):
        raise NotATranscript("it has no start event (an empty file, or not a tooloop transcript)")
    return events


def malformed(event) -> str | None:
    """What is wrong with one parsed line as an event of a transcript (FIELDS), or None."""
    if event.get("event") not in FIELDS:
        return "not an object with a known \"event\""
    wrong = [key for key, kind in FIELDS[event["event"]].items() if not isinstance(event.get(key), kind)]
    if wrong:
        return f"a {event['event']} event without a proper {', '.join(wrong)}"
    if event["event"] == "response":
        try:
            if not ChatCompletion.model_validate(event["body"]).choices:
                return "a response without a choice"
        except ValueError:
            return "a response that is no chat completion"
    return None


def listed(value) -> list:
    return value if isinstance(value, list) else []


def replayer(events: list[dict]):
    """(ask, check): the model's recorded replies in order, and a log hook that reports where
    the tools, or the user's check, now give a different result than when the run was recorded."""
    replies = iter(ChatCompletion.model_validate(e["body"]) for e in events if e["event"] == "response")
    recorded = iter([e for e in events if e["event"] in ("tool", "check")])
    divergences = []

    def ask(request: dict, show=None, stop=None) -> ChatCompletion:
        reply = next(replies, None)
        if reply is None:
            raise LookupError("the transcript has no more model replies")
        return reply

    def what(event: str, data: dict) -> str:
        return f"call {data['name']} {data['arguments']}" if event == "tool" else f"check {data['command']}"

    def check(event: str, **data) -> None:
        if event not in ("tool", "check"):
            return
        before = next(recorded, None)
        if before is None or what(before["event"], before) != what(event, data):
            divergences.append(f"{what(event, data)} was not in the recording")
        elif before["result"] != data["result"]:
            divergences.append(f"{what(event, data)} gave a different result:\n"
                               f"  recorded: {before['result'][:200]!r}\n  now:      {data['result'][:200]!r}")

    check.divergences = divergences
    return ask, check
