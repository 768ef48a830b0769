"""Tool calls that a model wrote as text instead of structured `tool_calls`.

Small local models often "call" a tool by writing the call into their reply: Qwen2.5-Coder puts
it in a ```json block, Hermes-style templates ask for <tool_call> tags, and Kimi K2's markup
leaks through when the server does not parse it. When a reply has no `tool_calls`, the loop asks
`recover_all` for calls written as text, whole files shown as code blocks (`file_blocks`),
commands shown as ```sh blocks and programs shown as ```python blocks (those two only when the
reply ends in code: in an answer, a block is an example or advice), in the order written.

Recovered, for the tool names the caller passes in only:

    <tool_call>{"name": "run_shell", "arguments": {"command": "ls"}}</tool_call>
        closing tag optional; any <tag> works, e.g. <function>{...}
    {"name": "run_shell", "arguments": {"command": "ls"}}
        on lines of its own, bare or in a ```json, ```tool_call or plain ``` block (or any code
        block that holds nothing else); several, or a JSON list of them; "parameters" for
        "arguments"; arguments as a JSON string; inside the OpenAI wrapper
        {"type": "function", "function": {...}}
    <|tool_call_begin|>functions.run_shell:0<|tool_call_argument_begin|>{"command": "ls"}
        Kimi K2; end markers, "functions." and ":0" optional. Also <function=run_shell>{...}
    <function name="run_shell" arguments='{"command": "ls"}'/>
        XML attributes, seen from Qwen2.5-Coder-1.5B inside <tools> tags
    read_file({'path': 'data.csv'})    read_file(path="data.csv")    read_file("data.csv")
        Python calls, in a ```python (or plain) block or on a line of their own, when that block
        or line holds nothing but tool calls with literal arguments; seen from the 1.5B model
        several times in a row

JSON is read leniently where the intent is plain: raw newlines in strings, trailing commas, `\\'`
(a quote, as Python reads it), Python literals ('single quotes', True, None), triple-quoted
strings (verbatim, dedented). A call whose last argument is a file's content that is no valid
string but runs to the end of a reply that was not cut off is read to that end (`_open_ended`).

Left out on purpose: a call-shaped object in the middle of a line or among code in a ```python
(or any non-JSON) code block, Python calls mixed with other code (`data = read_file("a.csv")[1:]`), XML
parameters (`<parameter name=...>`): a wrong guess runs a command the model never meant.
(A ```python block that calls a tool as a function is no program either, for the same reason.)

The code blocks are read by the rules in RULES, each a guess at what a block means; `recover_all`
says which rule produced each call it returns, so a run's transcript can count how often each one
fires.
"""

import ast
import json
import re
import textwrap

from tools import syntax_error

# What recover_all reads, under the name it reports for each call: the general reader first, then
# the code-block rules, each the most specific one that decided a call. Rules that read no call in
# the suite's runs were deleted (docs/results.md names them).
TEXT_CALL = "text-call"
RULES = (
    (TEXT_CALL, "a call written as text: JSON, <tool_call> tags, Kimi's markup, a Python call"),
    # whole files shown as code blocks (_file_blocks): write_file
    ("file-named", "a block whose file its first line (a comment) or else the prose before it names, alone"),
    ("file-unnamed", "an unnamed ```python block keeping every def and class of one file the run read"),
    ("splice-named", "a named block of functions the file has, alone: spliced into it in their place"),
    ("splice-unnamed", "an unnamed ```python block of functions one file the run read has: spliced in"),
    # commands shown as shell blocks (_command_blocks), in a reply that ends in code: run_shell
    ("sh-block", "a ```sh, bash, shell or zsh block: its text run as a command"),
    # programs shown as ```python blocks (_program), in a reply that ends in code: run_shell of python3
    ("python-program", "a ```python block that does something: run as a program"),
    ("python-shown-last", "a program that ends in a bare expression: run with that value printed"),
)

# A JSON value right after an XML-like tag: <tool_call>{..., <function>{..., <tools>[...
_AFTER_TAG = re.compile(r"<[\w-]+>\s*(?=[{\[])")
# A JSON value at the very start of a line, perhaps in Markdown's bold or inline code (**{...}**,
# `{...}`). Indented braces are left alone: they are code or data.
_LINE_START = re.compile(r"^(?:\*\*|__|`)?(?=[{\[])", re.M)
# What may follow a value that starts a line: the end of the line, a closing tag, a fence.
_LINE_END = re.compile(r"[ \t]*(?:\*\*|__|`)?[ \t]*(?:\n|<|```|\Z)")
# A fenced block; the closing fence is optional because a reply can stop anywhere.
_FENCE = re.compile(r"```([\w-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_JSON_FENCES = {"", "json", "jsonc", "json5", "tool_call", "tool_calls"}
# Formats that put the name outside the JSON: Kimi K2's markup and Llama 3's <function=NAME>.
_NAME_THEN_ARGS = [
    re.compile(r"(?:functions\.)?([\w-]+)(?::\d+)?\s*<\|tool_call_argument_begin\|>\s*"),
    re.compile(r"<function=([\w-]+)>\s*"),
    re.compile(r"""<function\s+name=["']([\w-]+)["']\s+(?:arguments|parameters)=["']\s*"""),
]
# A call's first key is one of the few keys a call may have. Checking that first keeps the
# lenient reader, which walks to the end of the text when a bracket never closes, off other text.
_CALL_START = re.compile(r"""\[?\s*\{\s*["'](?:name|arguments|parameters|function|type|id)["']""")
# For file_blocks: a code block's language must fit the file's type.
_LANGUAGES = {"py": ("python", "py", "python3"), "sh": ("sh", "bash", "shell"),
              "js": ("javascript", "js"), "ts": ("typescript", "ts"), "rb": ("ruby", "rb"),
              "go": ("go",), "rs": ("rust", "rs"), "c": ("c",), "html": ("html",), "css": ("css",)}
_FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:" + "|".join(_LANGUAGES) + r"))(?![\w/-])")
# For _program: top-level statements that do nothing by themselves.
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_QUIET = (*_DEFINITIONS, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)
_SHELLS = {"sh", "bash", "shell", "zsh"}
_TAG = re.compile(r"<[^<>\n]*>")  # </tool_call>, <|im_end|>: no prose
_NAME_COMMENT = re.compile(r"[ \t]*(?:#|//)[ \t]*((?:[\w-]+/)*[\w-]+\.\w+)[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_BRACES = re.compile(r"}*")  # stray closing braces after a call in doubled braces
_TRAILING_COMMA = re.compile(r",\s*[}\]]")
_JSON = json.JSONDecoder(strict=False)  # strict=False: raw newlines inside strings are fine

def recover_calls(text: str, names) -> list[tuple[str, str]]:
    """Tool calls written as text: [(tool_name, arguments_as_json_object_string), ...] in order.

    >>> recover_calls('```json\\n{"name": "run_shell", "arguments": {"command": "ls"}}\\n```', {"run_shell"})
    [('run_shell', '{"command": "ls"}')]
    """
    return [(name, json.dumps(args, ensure_ascii=False)) for _, name, args in _calls(text, names)]


def recover_all(text: str, names, current, quoted=frozenset(), read=(), whole=True) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Calls written as text, whole files shown as code blocks (for files no written call
    covers), commands shown as ```sh blocks and programs shown as ```python blocks, in the order
    they appear in the reply, each call once: (calls, rules), where rules[i] is (the name in
    RULES of the rule that read calls[i], calls[i] in words). A model that shows the file, then
    the command that runs it, means both, in that order. A command or program shown as a block
    runs only in a reply that ends in code (see _ends_in_code): one with prose after its last
    block is an answer, and the block in it an example or advice. A ```sh block holding a command in
    `quoted` (one that ran with no file changed since) quotes it, unless the reply writes first.
    `read`: the .py files the run has read or written (see file_blocks). `names`: the tool names,
    or a dict of them to their parameters in order (then `read_file("a.py")` is understood too).
    `whole`: the text is a whole reply, neither cut off at the token limit nor still streaming,
    so a call may run to its end (see _open_ended).

    >>> reply = "`t.py`:\\n```python\\nprint(1)\\n```\\n```sh\\npython t.py\\n```"
    >>> recover_all(reply, {"write_file", "run_shell"}, lambda path: None)[1]
    [('file-named', 'write_file of t.py'), ('sh-block', "run_shell of 'python t.py'")]
    >>> recover_all(reply + "\nIt prints 1.", {"write_file", "run_shell"}, lambda path: None)[1]
    [('file-named', 'write_file of t.py')]
    """
    calls = [(at, name, args, TEXT_CALL) for at, name, args in _calls(text, names, whole)]
    written = {args.get("path") for _, name, args, _ in calls if name == "write_file"}
    files = _file_blocks(text, current, read)
    blocks = [(start, "write_file", {"path": path, "content": body}, rule)
              for start, path, body, rule in files if path not in written and "write_file" in names]
    used = {start for start, *_ in files}
    writes = [at for at, name, *_ in calls + blocks if name == "write_file"]
    shown = _command_blocks(text, used) + _program(text, used, names) if _ends_in_code(text, calls) else []
    commands = [(start, "run_shell", {"command": command}, rule) for start, command, rule in shown
                if "run_shell" in names and (command not in quoted or any(at < start for at in writes))]
    ordered, seen = [], set()
    for _, name, args, rule in sorted(calls + blocks + commands, key=lambda call: call[0]):
        encoded = json.dumps(args, ensure_ascii=False)
        if (name, encoded) not in seen:  # a tutorial shows the same command twice: run it once
            seen.add((name, encoded))
            ordered.append(((name, encoded), (rule, _said(name, args))))
    return [call for call, _ in ordered], [rule for _, rule in ordered]


def _ends_in_code(text, calls) -> bool:
    """Does the reply end in code: nothing but blanks and tags after its last code block, or a
    call written as text after it? Failure answered: a small model's answer shows a command as an
    example or as advice ("if you ever want to start over you could run ```sh rm -rf data```, but
    only after a backup"), in the middle of the answer. A model that means to act ends its reply
    with the action, as it ends one with a call, and waits for the output; one that goes on in
    prose after the block is answering, and its blocks are shown, not run (and the reply is not
    stopped at them: aids.complete)."""
    last = max((block.end() for block in _FENCE.finditer(text)), default=0)
    return any(at >= last for at, *_ in calls) or not re.search(r"\w", _TAG.sub("", text[last:]))


def _said(name, args) -> str:
    """A call in a few words, for a note: `write_file of app.py`, `run_shell of 'ls'`."""
    command, path = args.get("command"), args.get("path")
    if name == "run_shell" and isinstance(command, str):
        if "\n" in command:
            return f"run_shell of a {len(command.splitlines())}-line command"
        return f"run_shell of {command!r}" if len(command) <= 60 else "run_shell of a long command"
    return f"{name} of {path}" if isinstance(path, str) else name


def file_blocks(text: str, current, read=()) -> list[tuple[str, str]]:
    """write_file calls for whole files that a reply shows as fenced code blocks instead of
    calling write_file: [("write_file", arguments_as_json_object_string), ...] in order.

    Small models write code far better in a ```python block than inside a JSON string. A block
    counts as the whole new content of PATH when its language fits PATH's type and either its
    first line is a comment that is PATH alone (`# primes.py`), or the prose since the previous
    block names PATH and no other file, or nothing names a file and the block is a ```python block that
    keeps every top-level def and class of exactly one file in `read` (the .py files the run has
    read or written; small models asked again for a change often answer with the new file alone,
    unnamed). Only the first block per file counts (later ones are usually
    the command that runs it), a block that mentions its own file's name outside its comments is
    a command (unless the file does too: a usage line in its docstring), Python
    must parse, and a block that would drop a top-level def or class the file has now is a
    snippet, not a file: its functions are spliced into the file in their place, if the run has
    read it. `current(path)` gives the file's text now, or None.
    """
    return [("write_file", json.dumps({"path": path, "content": body}, ensure_ascii=False))
            for _, path, body, _ in _file_blocks(text, current, read)]


def _file_blocks(text, current, read=()):
    """file_blocks with where each block starts and the rule that read it:
    [(position, path, content, rule), ...]."""
    found, prose_start = {}, 0
    for block in _FENCE.finditer(text):
        language, whole = block.group(1).lower(), block.group(2)
        prose, prose_start = text[prose_start:block.start()], block.end()
        comment = _NAME_COMMENT.match(whole)  # `# primes.py` heading the block: the file's own name
        paths, rule = [comment[1]] if comment else _named_alone(prose), "file-named"
        if not paths and language in _LANGUAGES["py"]:  # unnamed: a new version of the one file it keeps whole
            paths = [path for path in read if _definitions(current(path)) and _keeps_definitions(current(path), whole)]
            paths = paths or [path for path in read if _splice(current(path), whole)]  # or whose functions it redoes
            rule = "file-unnamed"
        if len(paths) != 1 or paths[0] in found or not block.group(0).endswith("```"):
            continue  # no single file named, already written, or cut off mid-block
        path, body = paths[0], whole
        if language not in _LANGUAGES.get(path.rpartition(".")[2], ()) or path in _code(body) and path not in (current(path) or ""):
            continue  # (a block that names its own file outside its comments is a command)
        if path.endswith(".py") and not _keeps_definitions(current(path), body):
            # a snippet: the functions it redoes, spliced into a file the run has read
            body = _splice(current(path), body) if path in read else None
            rule = "splice-unnamed" if rule == "file-unnamed" else "splice-named"
            if not body:
                continue
        found[path] = (block.start(), path, body, rule)
    return list(found.values())


def _code(body: str) -> str:
    """A block without its comment lines (a heading `# app.py`, a usage line `# python app.py`)."""
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith(("#", "//")))


def _holds(block, starts) -> bool:
    """Does this code block hold one of the file blocks that start at `starts`?"""
    return any(block.start() <= at < block.end() for at in starts)


def _named_alone(prose: str) -> list[str]:
    """The files the prose before a block names: all of them if it names one, else those that
    the sentence right before the block names ("Here is the code for `test_x.py`:")."""
    paths = list(dict.fromkeys(_FILE_NAME.findall(prose)))
    if len(paths) > 1:
        paths = list(dict.fromkeys(_FILE_NAME.findall(_SENTENCE_END.split(prose.rstrip())[-1])))
    return paths


def _command_blocks(text, used):
    """Shell commands a reply shows in complete ```sh (bash, shell, zsh) blocks that are not a
    file's content (`used`: where the file blocks start): [(position, command, "sh-block"), ...]."""
    return [(block.start(), block.group(2).strip(), "sh-block") for block in _FENCE.finditer(text)
            if block.group(1).lower() in _SHELLS and not _holds(block, used) and block.group(0).endswith("```")
            and block.group(2).strip()]


def _program(text, used, names):
    """The first ```python block of a reply that is a program, as a command that runs it:
    [(position, command, rule)] or []. A block is a
    program when it is complete, parses, does something at the top level (not only def, class,
    import and assignments), is no file's content (`used`), names no tool (a call as a function, or
    as a dict that the program would only print), and
    neither the prose before it nor a comment on its first line names a file (then it is that
    file's code, or a snippet of it: made-up code under "# app.py" that prints "all tests
    passed", run as a program, would pass for the check)."""
    prose_start = 0
    for block in _FENCE.finditer(text):
        language, body = block.group(1).lower(), block.group(2)
        prose, prose_start = text[prose_start:block.start()], block.end()
        if (language not in _LANGUAGES["py"] or _holds(block, used) or not block.group(0).endswith("```")
                or any(path.endswith(".py") for path in _FILE_NAME.findall(prose)) or _NAME_COMMENT.match(body)
                or any(re.search(rf"""\b{name}\s*\(|["']{name}["']""", body) for name in names)):
            continue
        try:
            statements = ast.parse(body).body
        except (SyntaxError, ValueError, RecursionError):
            continue
        if any(not isinstance(node, _QUIET) and not _is_docstring(node) for node in statements):
            script = shown_last(body.strip())
            rule = "python-shown-last" if script != body.strip() else "python-program"
            end = next(word for word in ("EOF", "END_OF_SCRIPT", "END_OF_PYTHON_SCRIPT") if word not in script.split("\n"))
            return [(block.start(), f"python3 - <<'{end}'\n{script}\n{end}", rule)]
    return []


def shown_last(script: str) -> str:
    """The script with its last statement's value printed when that statement is a bare expression
    other than None, as a notebook shows a cell's value: small models end a program with
    `sum(...)` and expect to see the total."""
    try:
        last = ast.parse(script).body[-1]
    except (SyntaxError, ValueError, RecursionError, IndexError):
        return script
    if not isinstance(last, ast.Expr) or (isinstance(last.value, ast.Call) and getattr(last.value.func, "id", "") == "print"):
        return script
    lines = script.splitlines()
    value = "\n".join(lines[last.lineno - 1:last.end_lineno])
    shown = "\n".join(lines[:last.lineno - 1] + [f"_value = ({value.strip()})", "if _value is not None:",
                                                  "    print(_value)"])
    try:  # (an expression sharing its line with another statement is left as it is)
        return shown if last.col_offset == 0 and ast.parse(shown) else script
    except SyntaxError:
        return script


def _splice(old: str | None, snippet: str) -> str | None:
    """`old` with the top-level functions and classes that `snippet` redefines replaced by the
    snippet's versions, when the snippet holds nothing else (imports `old` has are allowed) and
    `old` defines every one of them; else None. Small models often answer "The corrected code is:"
    and the one function they fixed, alone, for a file that holds others too."""
    try:
        old_nodes, new_nodes = ast.parse(old or "").body, ast.parse(snippet).body
    except (SyntaxError, ValueError, RecursionError):
        return None
    kinds = _DEFINITIONS
    defined = {node.name: node for node in old_nodes if isinstance(node, kinds)}
    imports = {ast.dump(node) for node in old_nodes if isinstance(node, (ast.Import, ast.ImportFrom))}
    redone = [node for node in new_nodes if isinstance(node, kinds)]
    if not redone or any(not (isinstance(node, kinds) and node.name in defined) and ast.dump(node) not in imports
                         for node in new_nodes):
        return None
    lines, new_lines = old.splitlines(keepends=True), snippet.splitlines(keepends=True)
    for node in sorted(redone, key=lambda node: -defined[node.name].lineno):  # bottom up: line numbers hold
        before = defined[node.name]
        start = min([before.lineno] + [d.lineno for d in before.decorator_list]) - 1
        text = new_lines[min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1:node.end_lineno]
        lines[start:before.end_lineno] = [line if line.endswith("\n") else line + "\n" for line in text]
    return "".join(lines)


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _keeps_definitions(old: str | None, new: str) -> bool:
    """Does `new` parse as Python and define every top-level function and class that `old` does?"""
    new_names = _definitions(new)
    return new_names is not None and (_definitions(old or "") or set()) <= new_names


def _definitions(source: str | None) -> set[str] | None:
    """The top-level functions and classes `source` defines; None if it is no Python."""
    try:
        return {node.name for node in ast.parse(source or "").body
                if isinstance(node, _DEFINITIONS)}
    except (SyntaxError, ValueError, RecursionError):
        return None


def _calls(text, names, whole=True):
    """Calls of the tools in `names` written as text, as (position, name, arguments), in order."""
    return sorted((call for call in _find_calls(text, whole) + _python_calls(text, names) if call[1] in names),
                  key=lambda call: call[0])


def _find_calls(text, whole=True):
    """Every call-shaped value in text, whatever its tool name, as (position, name, arguments)."""
    found = []
    for pattern in _NAME_THEN_ARGS:
        for m in pattern.finditer(text):
            parsed = _lenient(text, m.end())
            if parsed and isinstance(parsed[0], dict):
                found.append((m.start(), m.group(1), parsed[0]))

    # Where a JSON call may start: after a tag, at the start of the reply or of a line, or at the
    # start of a JSON code block, but not inside other code blocks, where a brace is code.
    tagged = {m.end() for m in _AFTER_TAG.finditer(text)}
    starts = tagged | {len(text) - len(text.lstrip())}
    code = []
    for m in _FENCE.finditer(text):
        body = m.end(2) - len(m.group(2).lstrip())
        if m.group(1).lower() in _JSON_FENCES or _whole_call(text, body, m.end(2)):
            starts.add(body)
        else:
            code.append(range(m.start(), m.end()))
    starts |= {m.end() for m in _LINE_START.finditer(text) if not any(m.start() in span for span in code)
               or text.startswith("{{", m.end())}  # (no code has a dict in a set)

    read_up_to = 0
    for start in sorted(starts):
        at = start + text.startswith("{{", start)  # seen: {{"name": ...}}, braces doubled as in str.format
        parsed = at >= read_up_to and _CALL_START.match(text, at) and (_lenient(text, at) or whole and _open_ended(text, at))
        # subtle: a tag says "this is a call" by itself (so a stray "}" after it is forgiven), but
        # a value that merely starts a line must also end it: `{...},` is the head of a list in code.
        end = parsed and (_BRACES.match(text, parsed[1]).end() if at > start else parsed[1])
        if not parsed or (start not in tagged and not _LINE_END.match(text, end)):
            continue
        value, read_up_to = parsed
        items = value if isinstance(value, list) else [value]
        calls = [_as_call(item) for item in items]
        if items and all(calls):  # a list counts only if it is all calls, or it is some other data
            found += [(start, name, args) for name, args in calls]
    return sorted(found, key=lambda call: call[0])


def _whole_call(text, start, end):
    """Whether text[start:end], a code block's body, is one call-shaped value and nothing else: a
    call in a ```python block is still a call (seen from the 1.5B model), where a brace among other
    code is code."""
    parsed = _CALL_START.match(text, start) and _lenient(text, start)
    return bool(parsed) and not text[parsed[1]:end].strip()


def _python_calls(text, names):
    """Tools called as Python functions, in a block or on a line that holds nothing else, with
    literal arguments: [(position, name, arguments), ...]. Positional arguments need `names` to
    be a dict of the tools' parameters in order."""
    found, fences = [], list(_FENCE.finditer(text))
    pieces = [(m.start(), m.group(2)) for m in fences if m.group(1).lower() in {"", "python", "py"}]
    pieces += [(m.start(), m.group(0)) for m in re.finditer(r"^[ \t]*\w+\(.*\)[ \t]*$", text, re.M)
               if not any(fence.start() <= m.start() < fence.end() for fence in fences)]
    for start, body in sorted(pieces):
        try:
            statements = ast.parse(textwrap.dedent(body)).body
            calls = [_literal_call(node, names) for node in statements]
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            continue
        if calls and all(calls):
            found += [(start, name, args) for name, args in calls]
    return found


def _literal_call(node, names):
    """(name, arguments) for a statement that is `tool(...)` with literal arguments, else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id in names):
        return None
    call, params = node.value, names.get(node.value.func.id, []) if isinstance(names, dict) else []
    if len(call.args) == 1 and isinstance(call.args[0], ast.Dict) and not call.keywords:
        args = ast.literal_eval(call.args[0])  # read_file({'path': 'a.csv'})
    elif len(call.args) <= len(params):
        args = {params[i]: ast.literal_eval(arg) for i, arg in enumerate(call.args)}
    else:
        return None
    args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
    return (call.func.id, args) if all(isinstance(key, str) for key in args) else None


def _as_call(value):
    """(name, arguments) if value is shaped like a tool call, else None."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]  # the OpenAI wrapper {"type": "function", "function": {...}}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    if set(value) - {"name", "arguments", "parameters", "type", "id"}:
        return None  # e.g. {"name": "Alice", "age": 3}, or a tool schema with its "description"
    # "parameters" is how Llama 3 names the arguments, and small models copy it from the schema.
    args = value.get("arguments", value.get("parameters"))
    if isinstance(args, str):  # arguments JSON-encoded as a string, as in the OpenAI API
        parsed = _lenient(args.strip(), 0)
        args = parsed[0] if parsed and parsed[1] == len(args.strip()) else None
    if not isinstance(args, dict) or isinstance(args.get("properties"), dict):
        return None  # no arguments, or a JSON schema echoed back as if it were the arguments
    return value["name"].removeprefix("functions."), args


def _lenient(text, start):
    """The JSON object or list that starts at text[start], read leniently: (value, end) or None."""
    if text[start:start + 1] not in ("{", "["):
        return None
    try:
        value, length = _JSON.raw_decode(text[start:])
        return value, start + length
    except (ValueError, RecursionError):
        pass
    # Not valid JSON: walk to the matching bracket, mending the text on the way, and try again.
    out, quote, depth, i = [], None, 0, start
    while i < len(text):
        c = text[i]
        if quote and c == "\\":
            i += 1
            escaped = text[i:i + 1]
            # subtle: JSON has no \' but Python reads it as a quote, which is what Qwen2.5-Coder
            # means when it writes one in a shell command; any other unknown escape, such as the
            # \d of a regex, keeps its backslash.
            if quote == '"' and escaped not in '"\\/bfnrtu':
                c = "'" if escaped == "'" else "\\\\" + escaped
            else:
                c += escaped
        elif quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        elif _TRAILING_COMMA.match(text, i):
            c = ""
        out.append(c)
        i += 1
        if depth == 0:
            break
    else:
        return None  # never closed: cut off, not a call
    # Mended JSON first, then the original as a Python literal ('single quotes', True, None).
    for parse in (lambda: json.loads("".join(out), strict=False),
                  lambda: ast.literal_eval(_raw_triple_quotes(text[start:i]))):
        try:
            return parse(), i
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass
    return None


# A call whose last argument is a string, up to that string's opening quotes: `{"name": "write_file",
# "arguments": {"path": "a.py", "content": """` (the tool, the other arguments, the last one's name, its quotes).
_LAST_STRING = re.compile(r'''\{\s*"name"\s*:\s*"([\w.]+)"\s*,\s*"(?:arguments|parameters)"\s*:\s*\{'''
                          r'''((?:\s*"\w+"\s*:\s*"(?:[^"\\\n]|\\.)*"\s*,)*)\s*"(\w+)"\s*:\s*("""|\'\'\'|")''')
_ESCAPE = re.compile(r'\\(["\\/\'nt])')
_ESCAPED = {"n": "\n", "t": "\t"}
# a tool's result copied whole, in the wrapper Qwen's chat template puts around it, to the end of the reply
_COPIED = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>[\s\"'}`]*\Z", re.S)


def _open_ended(text, start):
    """A call, written as text, whose last argument is a string that is no valid literal but
    plainly runs to the end of the reply: (value, end) or None.

    Failure answered: asked to put a file in a JSON string, small models write it as Python
    would (in triple quotes, or with its quotes left unescaped, its own docstrings inside, some
    line breaks escaped and some not), or forget the closing braces or quotes, and then repeat
    the same call after every note. The string is read from its opening quotes to the same
    quotes at the end of the reply (only closing braces, a closing fence or tag may follow; a
    fence may stand for the quotes). Of the ways to read it (verbatim, escapes read as JSON
    would, the opening quotes as the file's own) the first is kept, or for a .py file the first
    that is valid Python; if none is, the call is not guessed at.

    A string that starts with `<tool_response>` and ends the reply with `</tool_response>` is a
    tool's result the model copied whole, with the wrapper its chat template put around it (seen:
    a file read, then written under a new name): the text inside is the content, as it came."""
    if not (head := _LAST_STRING.match(text, start)):
        return None
    try:
        others = json.loads("{" + head[2].rstrip().removesuffix(",") + "}")
    except ValueError:
        return None
    if copied := _COPIED.match(text, head.end()):
        readings = [copied[1]]
    else:
        quote = re.escape(head[4])
        tail = re.compile(rf"(?:(?<!\\){quote}\s*(?:}}\s*)*(?:```|</[\w-]+>)?|```)\s*\Z").search(text, head.end())
        if not tail or tail.start() <= head.end():
            return None
        body = text[head.end():tail.start()]
        unescaped = _ESCAPE.sub(lambda m: _ESCAPED.get(m[1], m[1]), body)
        if "\n" not in unescaped:  # one line is no file's content: there, the quotes are more likely wrong than the braces
            return None
        readings = ([textwrap.dedent(body.removeprefix("\n")), unescaped, head[4] + body, head[4] + unescaped]
                    if len(head[4]) == 3 else [unescaped, body] if "\n" in body else [unescaped])
    if str(others.get("path")).endswith(".py"):  # write_file refuses invalid Python: keep what it would take
        readings = [reading for reading in readings if not syntax_error(reading)]
    return ({"name": head[1], "arguments": {**others, head[3]: readings[0]}}, len(text)) if readings else None


_TRIPLE = re.compile(r'"""|\'\'\'')


def _raw_triple_quotes(source: str) -> str:
    """Python source with every triple-quoted string made raw and dedented. A model that wraps a
    file's content in triple quotes means it verbatim: a backslash-n inside a string literal of
    that code must stay two characters, not become a line break that breaks the file. And it
    means it as code: the indentation it gave the whole block to line it up with the JSON around
    it, and the line break right after the opening quotes, are not part of the file (seen:
    a file written with every line indented, an IndentationError)."""
    out, i = [], 0
    while (opening := _TRIPLE.search(source, i)) and (end := source.find(opening[0], opening.end())) >= 0:
        body = textwrap.dedent(source[opening.end():end].removeprefix("\n"))
        if opening[0] not in body and not body.endswith("\\"):  # (dedenting cannot add either)
            out.append(source[i:opening.start()] + "r" + opening[0] + body + opening[0])
        else:
            out.append(source[i:opening.start()] + "r" + source[opening.start():end + 3])
        i = end + 3
    return "".join(out) + source[i:]
