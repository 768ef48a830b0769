"""Tests for recover.py: tool calls written as text, their near misses, and botched attempts.

Each case is a whole model reply, many of them shapes seen from small models (see
../shared/facts.md and issue 4). How the loop uses the results is tested against the fake
server elsewhere, not here.
"""

import json
import re

import pytest
from hypothesis import given, strategies as st

from recover import RULES, file_blocks, recover_all, recover_calls

NAMES = {"read_file", "write_file", "run_shell"}
F = "```"  # a code fence, kept out of the strings below so they stay readable
LS = '{"name": "run_shell", "arguments": {"command": "ls"}}'
READ = '{"name": "read_file", "arguments": {"path": "a.py"}}'


def shell(command):
    return ("run_shell", json.dumps({"command": command}))


# (id, model reply, expected calls)
RECOVERED = [
    # Hermes / Qwen <tool_call> markup, as the chat templates of both local models ask for it.
    ("hermes", f"<tool_call>\n{LS}\n</tool_call>", [shell("ls")]),
    ("hermes-one-line", f"<tool_call>{LS}</tool_call>", [shell("ls")]),
    # a call on a line of its own, dressed in Markdown: bold, or inline code
    ("markdown-bold", f"**{LS}**", [shell("ls")]),
    ("markdown-inline-code", f"Listing it:\n`{LS}`\n", [shell("ls")]),
    ("hermes-no-end-tag", f"<tool_call>\n{LS}", [shell("ls")]),
    ("hermes-spacing", '<tool_call>\n    {"name": "run_shell",\n  "arguments": {"command": "ls"}}\n  </tool_call>\n',
     [shell("ls")]),
    ("hermes-prose-around", f"I will list the files.\n<tool_call>\n{LS}\n</tool_call>\nThen I read them.",
     [shell("ls")]),
    ("hermes-two-in-a-row", f"<tool_call>\n{LS}\n</tool_call>\n<tool_call>\n{READ}\n</tool_call>",
     [shell("ls"), ("read_file", '{"path": "a.py"}')]),
    ("hermes-stray-brace", f"<tool_call>\n{LS}}}\n</tool_call>", [shell("ls")]),
    ("hermes-python-literal", "<tool_call>{'name': 'run_shell', 'arguments': {'command': 'ls -la'}}</tool_call>",
     [shell("ls -la")]),
    ("other-tag", f"<function>\n{LS}\n</function>", [shell("ls")]),
    ("hermes-in-xml-fence", f"{F}xml\n<tool_call>\n{LS}\n</tool_call>\n{F}", [shell("ls")]),
    # Fenced JSON, as Qwen2.5-Coder-1.5B answered the fizzbuzz task (facts.md), blank lines and all.
    ("fenced-json-facts", f'{F}json\n{{\n  "name": "run_shell",\n  "arguments": {{\n    "command": '
     f'"python fizzbuzz.py"\n  }}\n}}\n{F}\n\n\n\n', [shell("python fizzbuzz.py")]),
    ("fenced-plain", f"{F}\n{LS}\n{F}", [shell("ls")]),
    ("fenced-tool_call", f"{F}tool_call\n{LS}\n{F}", [shell("ls")]),
    ("fenced-indented", f"{F}json\n   {LS}\n{F}", [shell("ls")]),
    ("fenced-unclosed", f"{F}json\n{LS}\n\n\n\n", [shell("ls")]),
    ("fenced-prose-around", f"Let me run it.\n\n{F}json\n{LS}\n{F}\n\nThis will list the files.", [shell("ls")]),
    # Seen here (add-cli-flag): braces doubled as in a str.format template, the last one missing.
    ("fenced-doubled-braces", f'{F}json\n{{{LS}}}\n{F}', [shell("ls")]),
    ("fenced-doubled-braces-unclosed", f'{F}json\n{{{LS}\n{F}', [shell("ls")]),
    # Seen here (fix-bug): the same reply five times, doubled braces, one too many at the end, in a python block.
    ("doubled-braces-in-a-python-block", f'{F}python\n# tools.py\n{{{READ}}}}}\n{F}', [("read_file", '{"path": "a.py"}')]),
    ("fenced-list-of-two", f"{F}json\n[\n  {READ},\n  {LS}\n]\n{F}", [("read_file", '{"path": "a.py"}'), shell("ls")]),
    # Bare JSON, as Qwen2.5-Coder answers through Ollama.
    ("bare", LS, [shell("ls")]),
    ("bare-spaces-around", f"\n  {LS}\n", [shell("ls")]),
    ("bare-own-line-in-prose", f"Sure.\n{LS}\nDone.", [shell("ls")]),
    ("bare-two-lines", f"{LS}\n{READ}", [shell("ls"), ("read_file", '{"path": "a.py"}')]),
    # Argument shapes.
    ("arguments-as-string", '{"name": "run_shell", "arguments": "{\\"command\\": \\"ls\\"}"}', [shell("ls")]),
    ("openai-wrapper", '{"type": "function", "function": {"name": "run_shell", "arguments": "{\\"command\\": '
     '\\"ls\\"}"}}', [shell("ls")]),
    ("openai-wrapper-object", f'<tool_call>{{"id": "call_1", "type": "function", "function": {LS}}}</tool_call>',
     [shell("ls")]),
    ("parameters-for-arguments", '{"name": "run_shell", "parameters": {"command": "ls"}}', [shell("ls")]),
    ("functions-prefix", '{"name": "functions.run_shell", "arguments": {"command": "ls"}}', [shell("ls")]),
    ("empty-arguments", '<tool_call>{"name": "run_shell", "arguments": {}}</tool_call>', [("run_shell", "{}")]),
    # Lenient JSON. Seen here: Qwen2.5-Coder-1.5B escaped single quotes, which JSON does not allow.
    ("backslash-quote", '{"name": "run_shell", "arguments": {"command": "python -c \\\'print(\\"hi\\")\\\'"}}',
     [shell("python -c 'print(\"hi\")'")]),
    ("unknown-escape", '{"name": "run_shell", "arguments": {"command": "grep -E \\"\\d+\\" a.txt"}}',
     [shell('grep -E "\\d+" a.txt')]),
    ("trailing-commas", '{"name": "run_shell", "arguments": {"command": "ls", "timeout": null,},}',
     [("run_shell", '{"command": "ls", "timeout": null}')]),
    ("backslash-quote-and-raw-newline", '{"name": "write_file", "arguments": {"path": "a.sh", "content": '
     '"echo \\\'hi\\\'\n"}}', [("write_file", json.dumps({"path": "a.sh", "content": "echo 'hi'\n"}))]),
    ("raw-newlines", '{"name": "write_file", "arguments": {"path": "f.py", "content": "def f():\n  return {1: 2}\n"}}',
     [("write_file", json.dumps({"path": "f.py", "content": "def f():\n  return {1: 2}\n"}))]),
    # Seen here: Qwen2.5-Coder-1.5B wrapped a test file in triple quotes; the file's own "\\n"
    # must stay a backslash and an n (as a line break it ends the string literal mid-line).
    ("triple-quoted-content", '{"name": "write_file", "arguments": {"path": "t.py", "content": """\n'
     'print("a\\nb")\n"""}}', [("write_file", json.dumps({"path": "t.py", "content": 'print("a\\nb")\n'}))]),
    # Seen here (fizzbuzz): the block indented to line up with the JSON, an IndentationError as is.
    ("triple-quoted-indented", '{"name": "write_file", "arguments": {"path": "f.py", "content": """\n'
     '    for i in range(3):\n        print(i)\n    """}}',
     [("write_file", json.dumps({"path": "f.py", "content": "for i in range(3):\n    print(i)\n"}))]),
    ("python-literals", "{'name': 'write_file', 'arguments': {'path': 'x', 'content': 'it\\'s', 'force': True}}",
     [("write_file", '{"path": "x", "content": "it\'s", "force": true}')]),
    # Kimi K2 markup, as it stays in `content` when the server does not parse it (facts.md).
    ("kimi", "<|tool_calls_section_begin|><|tool_call_begin|>functions.run_shell:0<|tool_call_argument_begin|>"
     '{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>', [shell("ls")]),
    ("kimi-no-end-markers", "<|tool_calls_section_begin|><|tool_call_begin|>functions.run_shell:0"
     '<|tool_call_argument_begin|>{"command": "ls"}', [shell("ls")]),
    ("kimi-spacing-no-prefix-no-index", "<|tool_calls_section_begin|>\n<|tool_call_begin|> run_shell "
     '<|tool_call_argument_begin|>\n{"command": "ls"}\n<|tool_call_end|>\n', [shell("ls")]),
    ("kimi-two-calls", "I'll look.<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0"
     '<|tool_call_argument_begin|>{"path": "a.py"}<|tool_call_end|><|tool_call_begin|>functions.run_shell:1'
     '<|tool_call_argument_begin|>{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>',
     [("read_file", '{"path": "a.py"}'), shell("ls")]),
    # Seen here (the e2e test's task): a call alone in a ```python block, which ran as a program printing it.
    ("call-alone-in-python-block", f"Let's correct that.\n{F}python\n{LS}\n{F}", [shell("ls")]),
    ("llama-function-tag", '<function=run_shell>{"command": "ls"}</function>', [shell("ls")]),
    # Seen here (fix-shell-script, add-cli-flag): Qwen2.5-Coder-1.5B put calls in XML attributes.
    ("xml-attributes", "<tools>\n  <function name=\"run_shell\" arguments='{\"command\": \"sh backup.sh\"}'/>\n</tools>",
     [shell("sh backup.sh")]),
    ("xml-attributes-two", "<function name=\"read_file\" arguments='{\"path\": \"a.py\"}'/>\n"
     "<function name='run_shell' parameters=\"{'command': 'ls'}\" />", [("read_file", '{"path": "a.py"}'), shell("ls")]),
]

# (id, model reply): no call in there; running anything would run a command nobody asked for.
NOT_CALLS = [
    ("prose", "I created fizzbuzz.py and ran it: it prints the expected 15 lines."),
    ("mentions-json", "I can answer in JSON if you like, e.g. with a name and arguments field."),
    ("json-example", 'Here is a record:\n{"name": "Alice", "age": 3}'),
    ("bold-mid-line", f"It would be x = **{LS}** here."),
    ("unknown-tool", '{"name": "delete_everything", "arguments": {"path": "/"}}'),
    ("unknown-tool-kimi", '<|tool_call_begin|>functions.browse:0<|tool_call_argument_begin|>{"url": "x"}'),
    ("dict-in-python-block", f"{F}python\ncall = {LS}\nprint(call)\n{F}"),
    ("list-item-in-code", f"{F}\ncalls = [\n{LS},\n{READ},\n]\n{F}"),
    ("indented-dict-in-code", f"tools = [\n    {LS}\n]"),
    ("mid-sentence", f"You could send {LS} to list the files."),
    ("trailing-text-on-line", f"{LS} and then read the output"),
    ("list-mixing-other-data", f'[{LS}, {{"name": "Alice", "age": 3}}]'),
    ("schema-echo", '<tools>\n{"type": "function", "function": {"name": "run_shell", "description": "Run a command",'
     ' "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}\n'
     "</tools>"),
    ("schema-without-description", '{"name": "run_shell", "parameters": {"type": "object", "properties": '
     '{"command": {"type": "string"}}}}'),
    ("no-arguments", '{"name": "run_shell"}'),
    ("arguments-not-json", '{"name": "run_shell", "arguments": "ls -la"}'),
    ("cut-off", '<tool_call>\n{"name": "run_shell", "arguments": {"command": "ls'),
    ("extra-keys", '{"name": "run_shell", "arguments": {"command": "ls"}, "reason": "to look"}'),
    ("empty", ""),
]


@pytest.mark.parametrize("text, expected", [case[1:] for case in RECOVERED], ids=[case[0] for case in RECOVERED])
def test_recovers(text, expected):
    assert recover_calls(text, NAMES) == expected


@pytest.mark.parametrize("text", [case[1] for case in NOT_CALLS], ids=[case[0] for case in NOT_CALLS])
def test_not_a_call(text):
    assert recover_calls(text, NAMES) == []


def test_only_known_names_count():
    assert recover_calls(f"<tool_call>{LS}</tool_call>", {"read_file"}) == []


def test_arguments_come_back_as_a_json_object_string():
    [(name, arguments)] = recover_calls('{"name": "write_file", "arguments": {"path": "é.txt", "content": ""}}', NAMES)
    assert name == "write_file" and json.loads(arguments) == {"path": "é.txt", "content": ""}


# (id, model reply, what is wrong with it): botched calls, which are not guessed at
FAILED = [
    # Seen here: asked for fizzbuzz, Qwen2.5-Coder-1.5B echoed a tool schema, then wrote code.
    ("schema-echo-then-code", '<tools>\n{"type": "function", "function": {"name": "write_file", "description": '
     '"Write a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}\n</tools>\n\n'
     f"{F}python\nfor i in range(1, 16):\n    print('FizzBuzz' if i % 15 == 0 else i)\n{F}", "definitions"),
    ("broken-hermes-json", '<tool_call>\n{"name": "run_shell", "arguments": {"command": "ls"\n</tool_call>', "markup"),
    ("broken-kimi-json", "<|tool_calls_section_begin|><|tool_call_begin|>functions.run_shell:0"
     "<|tool_call_argument_begin|>{command: ls}<|tool_call_end|>", "markup"),
    ("unknown-tool", '{"name": "search_web", "arguments": {"query": "fizzbuzz"}}', "search_web"),
    ("unknown-tool-in-markup", '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>', "python"),
    ("bare-json-broken", '{"name": "run_shell", "arguments": {"command": "ls"}', "run_shell"),
    ("call-among-code-in-python-block", f"{F}python\n{LS}\nprint('sent')\n{F}", "run_shell"),
    ("call-mid-sentence", f"I will now send {LS} to list them.", "run_shell"),
    ("python-call-in-code", 'out = run_shell(command="python fizzbuzz.py")\nprint(out)', "run_shell"),
    # Seen here (add-cli-flag): XML attributes around JSON that does not parse (raw quotes).
    ("xml-attributes-broken", "<tools>\n<function name=\"write_file\" arguments='{\"path\": \"g.py\", \"content\": "
     "\"p = A(description=\"Greet\")\"}' />\n</tools>", "markup"),
    ("made-up-output", f"{F}python\nfor i in range(1, 4):\n    print(i)\n{F}\n\n**Output:**\n{F}\n1\n2\n3\n{F}",
     "imagined"),
    ("made-up-output-prose", f"{F}python\nprint(2 + 2)\n{F}\nWhen you run this code, it will output:\n4", "imagined"),
    ("made-up-transcript", f"{F}console\n$ python fizzbuzz.py\n1\n2\nFizz\n{F}", "imagined"),
]

# Genuine final answers.
FINAL = [
    ("prose", "Done: fizzbuzz.py prints 1 to 15 with Fizz, Buzz and FizzBuzz, and I ran it to check."),
    ("code-without-output", f"Here is the fix:\n{F}python\ndef add(a, b):\n    return a + b\n{F}\n"
     "It prints nothing and returns the sum."),
    ("usage-instructions", f"Run it with:\n{F}\n$ python fizzbuzz.py\n{F}"),
    ("json-example", 'The config now reads:\n{"name": "Alice", "age": 3}'),
    ("mentions-tool-in-prose", "I used run_shell to run the tests; all 4 passed."),
]


@pytest.mark.parametrize("text", [case[1] for case in FAILED + FINAL], ids=[case[0] for case in FAILED + FINAL])
def test_botched_calls_and_final_answers_are_no_calls(text):
    assert recover_calls(text, NAMES) == []


def test_a_result_copied_with_the_templates_wrapper_is_read_without_it():
    # Qwen's template shows a result as <tool_response>\nTEXT\n</tool_response>; the model copies it whole
    copy = '{"name": "write_file", "arguments": {"path": "b.py", "content": """<tool_response>\nx = 1\n\n</tool_response>'
    assert recover_calls(copy, NAMES) == [("write_file", json.dumps({"path": "b.py", "content": "x = 1\n"}))]
    assert recover_calls(copy.replace("x = 1", "x = ("), NAMES) == []  # no valid Python: not guessed at
    assert recover_calls(copy.removesuffix("</tool_response>"), NAMES) == []  # no closing tag: no copy


# --- whole files shown as code blocks (file_blocks) -------------------------------------------

STATS = "def mean(v):\n    return sum(v) / len(v)\n\n\ndef median(v):\n    return sorted(v)[len(v) // 2]\n"
FIZZ = "for i in range(1, 21):\n    print(i)\n"
SCRIPT = "#!/bin/sh\nmkdir -p backup\ncp data/*.txt backup/\n"


def written(path, content):
    return [("write_file", json.dumps({"path": path, "content": content}))]


# (id, model reply, the files as they are now, expected write_file calls)
BLOCKS = [
    # Seen here (Qwen2.5-Coder-1.5B, fizzbuzz): the file named in a heading, then a run command.
    ("named-in-prose", f"### Step 1: Create `fizzbuzz.py`\n\n{F}python\n{FIZZ}{F}\n\nRun it:\n{F}sh\n"
     f"python fizzbuzz.py\n{F}", {}, written("fizzbuzz.py", FIZZ)),
    # Seen here (fizzbuzz, dev): the block headed by a comment that names it; a comment outside the
    # code (a usage line) does not make the block a command.
    ("named-in-its-first-line", f"Here it is:\n{F}python\n# fizzbuzz.py\n{FIZZ}{F}", {},
     written("fizzbuzz.py", "# fizzbuzz.py\n" + FIZZ)),
    ("its-first-line-over-the-prose", f"`main.py` runs it. Here:\n{F}python\n# fizz/core.py\n{FIZZ}{F}", {},
     written("fizz/core.py", "# fizz/core.py\n" + FIZZ)),
    ("a-usage-comment-is-no-command", f"Here is the content of `fizzbuzz.py`:\n{F}python\n# run: python3 fizzbuzz.py\n"
     f"{FIZZ}{F}", {}, written("fizzbuzz.py", "# run: python3 fizzbuzz.py\n" + FIZZ)),
    # Seen here (fix-shell-script): the corrected script, then chmod and a run, both naming it.
    ("shell-script-then-commands", f"To fix `backup.sh`, here is the corrected script:\n\n{F}bash\n{SCRIPT}{F}\n\n"
     f"Now save this script as `backup.sh` and make it executable:\n\n{F}sh\nchmod +x backup.sh\n{F}",
     {"backup.sh": "cp data/*.text backup/\n"}, written("backup.sh", SCRIPT)),
    ("keeps-every-definition", f"The fixed `stats.py`:\n{F}python\n{STATS.replace('// 2]', '// 2] * 1')}{F}",
     {"stats.py": STATS}, written("stats.py", STATS.replace("// 2]", "// 2] * 1"))),
    # Seen here (write-unit-test): the prose names two files, the line before the block one.
    ("named-in-the-line-before", f"To test `count_words` in `wordcount.py`:\n\nHere is the content of the "
     f"`test_wordcount.py` file:\n\n{F}python\nprint('ok')\n{F}", {}, written("test_wordcount.py", "print('ok')\n")),
    # Seen here (implement-function): one paragraph, the last sentence names the file.
    ("named-in-the-sentence-before", "We implement `to_roman` in `roman.py` and run `test_roman.py`. Here is "
     f"`to_roman` in `roman.py`:\n\n{F}python\ndef to_roman(n):\n    return 'I' * n\n{F}",
     {"roman.py": "def to_roman(n):\n    raise NotImplementedError\n"},
     written("roman.py", "def to_roman(n):\n    return 'I' * n\n")),
    # Seen here (add-cli-flag): asked again for the change, the new greet.py alone, unnamed.
    ("unnamed-new-version-of-the-one-file-it-keeps", f"{F}python\ndef main():\n    print('HI')\n\n\nmain()\n{F}",
     {"greet.py": "def main():\n    print('hi')\n", "test_greet.py": "def test():\n    pass\n"},
     written("greet.py", "def main():\n    print('HI')\n\n\nmain()\n")),
    # Seen here (a CLI flag): the whole new file, whose docstring names it, as the file it read did.
    ("its-docstring-names-it-as-the-file-did", f"Add it to `todo.py`:\n{F}python\n\"\"\"`python todo.py --all`\"\"\"\nprint(2)\n{F}",
     {"todo.py": '"""`python todo.py --all`"""\nprint(1)\n'}, written("todo.py", '"""`python todo.py --all`"""\nprint(2)\n')),
    # A block that drops functions of the file is a snippet, main guard or not: never the whole file.
    ("a-block-that-drops-functions-is-no-rewrite", f"Change `greet.py`:\n{F}python\nimport sys\n\n"
     f"if __name__ == \"__main__\":\n    print(sys.argv)\n{F}", {"greet.py": "def main():\n    print(1)\n\n\nmain()\n"}, []),
    ("two-files", f"`a.py`:\n{F}python\nx = 1\n{F}\n`b.py`:\n{F}python\ny = 2\n{F}", {},
     written("a.py", "x = 1\n") + written("b.py", "y = 2\n")),
    # Seen here (fix-bug): "the corrected `median`" alone, for a file the run has read: spliced in
    # place of the old median, mean() kept.
    ("function-spliced-in", f"To fix `stats.py`, here is the corrected median:\n{F}python\n"
     f"def median(v):\n    return 0\n{F}", {"stats.py": STATS},
     written("stats.py", STATS.replace("return sorted(v)[len(v) // 2]", "return 0"))),
    ("unnamed-function-spliced-in", f"{F}python\ndef median(v):\n    return 0\n{F}", {"stats.py": STATS},
     written("stats.py", STATS.replace("return sorted(v)[len(v) // 2]", "return 0"))),
    # Not files: nothing is written.
    ("snippet-with-other-code", f"To fix `stats.py`:\n{F}python\ndef median(v):\n    return 0\nx = 1\n{F}",
     {"stats.py": STATS}, []),
    ("snippet-with-a-new-function", f"To fix `stats.py`:\n{F}python\ndef mode(v):\n    return 0\n{F}",
     {"stats.py": STATS}, []),
    ("unnamed-keeps-two-files", f"{F}python\ndef f():\n    pass\n{F}",
     {"a.py": "def f():\n    pass\n", "b.py": "def f():\n    return 1\n"}, []),
    ("unnamed-and-the-file-defines-nothing", f"{F}python\nprint(2)\n{F}", {"s.py": "print(1)\n"}, []),
    ("two-files-named", f"Change `a.py` and `b.py`:\n{F}python\nx = 1\n{F}", {}, []),
    ("no-file-named", f"Here is the function:\n{F}python\n{FIZZ}{F}", {}, []),
    ("language-does-not-fit", f"`notes.py` should hold:\n{F}sh\nls\n{F}", {}, []),
    ("no-language", f"`fizzbuzz.py`:\n{F}\n{FIZZ}{F}", {}, []),
    ("output-not-a-file", f"`fizzbuzz.py` prints:\n{F}text\n1\n2\n{F}", {}, []),
    ("command-naming-its-file", f"Run `fizzbuzz.py` like this:\n{F}python\npython fizzbuzz.py\n{F}", {}, []),
    ("does-not-parse", f"`fizzbuzz.py`:\n{F}python\nprint(i) for i in range(3)\n{F}", {}, []),
    ("cut-off-mid-block", f"`fizzbuzz.py`:\n{F}python\n{FIZZ}", {}, []),
    ("mentions-its-own-name", f"`run.sh`:\n{F}sh\necho run.sh started\n{F}", {}, []),
]


@pytest.mark.parametrize("text, files, expected", [case[1:] for case in BLOCKS], ids=[case[0] for case in BLOCKS])
def test_file_blocks(text, files, expected):
    assert recover_calls(text, NAMES) == []
    assert file_blocks(text, files.get, list(files)) == expected  # `files` are the ones the run has read


def test_a_function_is_spliced_only_into_a_file_the_run_has_read():
    text = f"To fix `stats.py`, here is the corrected median:\n{F}python\ndef median(v):\n    return 0\n{F}"
    assert file_blocks(text, {"stats.py": STATS}.get, []) == []  # a snippet that would drop mean()


# --- everything a reply holds, in order (recover_all) -----------------------------------------

def ran(command):
    return ("run_shell", json.dumps({"command": command}))


# (id, model reply, commands that ran with no write since, expected calls)
REPLIES = [
    # Seen here (write-unit-test): the file, then "to run the tests, execute" and the command, twice.
    ("file-then-command", f"`t.py`:\n{F}python\nprint(1)\n{F}\nTo run it:\n{F}sh\npython t.py\n{F}\n"
     f"Or:\n{F}bash\npython t.py\n{F}", set(), written("t.py", "print(1)\n") + [ran("python t.py")]),
    # A ```console block shows a session, output and all: it is not run.
    ("console-block", f"{F}console\n$ grep -c ERROR app.log\n1\n{F}", set(), []),
    # A ```sh block runs as written (the error, "read_file: command not found", goes to the model).
    ("read-written-as-a-command", f"{F}sh\nread_file todo.py\n{F}", set(), [ran("read_file todo.py")]),
    ("read-in-a-pipeline-stays-a-command", f"{F}sh\nread_file todo.py | head\n{F}", set(),
     [ran("read_file todo.py | head")]),
    ("json-call-then-block", f'{F}json\n{{"name": "run_shell", "arguments": {{"command": "ls"}}}}\n{F}\n'
     f"{F}sh\nls\n{F}", set(), [ran("ls")]),
    ("script-then-its-command", f"The fixed `backup.sh`:\n{F}sh\ncp data/*.txt backup/\n{F}\nRun:\n{F}sh\n"
     f"sh backup.sh\n{F}", set(), written("backup.sh", "cp data/*.txt backup/\n") + [ran("sh backup.sh")]),
    # Seen here (find-fact): the final answer quotes the command that found the line.
    ("quote-of-what-ran", f"I ran:\n{F}sh\ngrep ERROR server.log\n{F}\nIt is req-7309.", {"grep ERROR server.log"}, []),
    ("ran-but-a-file-changed-first", f"`t.py`:\n{F}python\nprint(2)\n{F}\n{F}sh\npython t.py\n{F}",
     {"python t.py"}, written("t.py", "print(2)\n") + [ran("python t.py")]),
    # Seen here (csv-total): no file named, a program that computes the answer: it runs.
    ("program", f"Here is the code:\n{F}python\nwith open('s.csv') as f:\n    print(len(f.read()))\n{F}", set(),
     [ran("python3 - <<'EOF'\nwith open('s.csv') as f:\n    print(len(f.read()))\nEOF")]),
    # Several programs: the first runs (its output is what the model asked to see first).
    ("first-of-two-programs", f"Step 1:\n{F}python\nx = 2\nprint(x)\n{F}\nStep 2:\n{F}python\nprint(x * 2)\n{F}", set(),
     [ran("python3 - <<'EOF'\nx = 2\nprint(x)\nEOF")]),
    ("program-with-an-EOF-line", f'{F}python\nprint("""\nEOF\n""")\n{F}', set(),
     [ran('python3 - <<\'END_OF_SCRIPT\'\nprint("""\nEOF\n""")\nEND_OF_SCRIPT')]),
    # Not commands: a block in an answer, with prose after it, is an example or advice, and a file
    # shown in it is still written.
    ("advice-in-an-answer", "`report.py` prints the total; I changed nothing. If you ever want to start over you "
     f"could run {F}sh rm -rf data{F} but only after a backup.", set(), []),
    ("advice-block-in-an-answer", f"Nothing to change. To start over:\n{F}sh\nrm -rf data\n{F}\n(back it up first)",
     set(), []),
    ("file-then-command-then-prose", f"`t.py`:\n{F}python\nprint(1)\n{F}\n{F}sh\npython t.py\n{F}\nIt prints 1.",
     set(), written("t.py", "print(1)\n")),
    ("program-then-prose", f"{F}python\nprint(len(open('s.csv').read()))\n{F}\nThis prints the size.", set(), []),
    ("definitions-only", f"The function:\n{F}python\nimport os\nX = 1\ndef f():\n    return X\n{F}", set(), []),
    ("tool-as-a-function", f"{F}python\nresult = read_file('s.csv')\nprint(result)\n{F}", set(), []),
    ("call-as-a-dict-among-code", f"{F}python\ncall = {{'name': 'run_shell', 'arguments': {{'command': 'ls'}}}}\n"
     f"print(call)\n{F}", set(), []),
    # Seen here (fix-bug): a comment names the file, the code would drop its functions (so it is
    # not written), and it prints "all tests passed": not a program either.
    ("code-named-in-its-comment", f"{F}python\n# stats.py\nprint('all tests passed')\n{F}", set(), []),
    ("code-for-a-named-file", f"In `stats.py`, use:\n{F}python\nprint(median([1, 2]))\n{F}", set(), []),
    ("output-block", f"It prints:\n{F}\nFizz\n{F}\n{F}text\nBuzz\n{F}", set(), []),
    ("cut-off-block", f"{F}sh\nrm -rf bui", set(), []),
    ("console-output-only", f"{F}console\nall tests passed\n{F}", set(), []),
]


@pytest.mark.parametrize("text, quoted, expected", [case[1:] for case in REPLIES], ids=[case[0] for case in REPLIES])
def test_recover_all(text, quoted, expected):
    files = {"stats.py": STATS}
    assert recover_all(text, NAMES, files.get, quoted)[0] == expected


# A reply as pieces: prose, or a ```sh block holding a command.
PIECES = st.lists(st.one_of(st.tuples(st.just("prose"), st.text("ab .,:\n", min_size=1, max_size=12)),
                            st.tuples(st.just("sh"), st.sampled_from(["ls", "rm -rf data", "python t.py"]))),
                  min_size=1, max_size=6)


@given(PIECES)
def test_a_command_block_runs_only_in_a_reply_that_ends_in_code(pieces):
    text = "".join(f"\n{F}sh\n{body}\n{F}\n" if kind == "sh" else body for kind, body in pieces)
    # the reference: a word of prose after the last block makes the reply an answer, which runs nothing
    last = max((i for i, (kind, _) in enumerate(pieces) if kind == "sh"), default=len(pieces))
    answer = any(kind == "prose" and re.search(r"\w", body) for kind, body in pieces[last:])
    expected = [] if answer else [ran(body) for body in dict.fromkeys(body for kind, body in pieces if kind == "sh")]
    assert recover_all(text, NAMES, lambda path: None)[0] == expected


PARAMETERS = {"read_file": ["path"], "write_file": ["path", "content"], "run_shell": ["command"]}
PYTHON_CALLS = [
    # Seen here (csv-total): four replies in a row, each this block alone.
    ("dict-argument-in-a-block", f"{F}python\nread_file({{'path': 'sales.csv'}})\n{F}", [("read_file", {"path": "sales.csv"})]),
    ("keywords-on-lines", "Let me look.\nread_file(path='a.py')\nrun_shell(command=\"ls -l\")\nThen I fix it.",
     [("read_file", {"path": "a.py"}), ("run_shell", {"command": "ls -l"})]),
    ("positional-in-an-indented-block", f"1. Read it:\n   {F}python\n   read_file('s.csv')\n   {F}\n",
     [("read_file", {"path": "s.csv"})]),
    ("positional-write", f"{F}python\nwrite_file('n.txt', '3596.41')\n{F}", [("write_file", {"path": "n.txt", "content": "3596.41"})]),
    # Not calls: mixed with code, not literal, mid-sentence, too many arguments, other functions.
    ("assigned", f"{F}python\ndata = read_file('a.csv')\n{F}", []),
    ("with-other-code", f"{F}python\nread_file('a.csv')\nprint(1)\n{F}", []),
    ("not-literal", f"{F}python\nwrite_file({{'path': 'n.txt', 'content': f'{{total:.2f}}'}})\n{F}", []),
    ("mid-sentence", "I will call read_file('a.py') now.", []),
    ("too-many-arguments", "run_shell('ls', 'now')", []),
    ("other-function", "print('read_file')", []),
]


@pytest.mark.parametrize("text, expected", [case[1:] for case in PYTHON_CALLS], ids=[case[0] for case in PYTHON_CALLS])
def test_python_calls(text, expected):
    assert [(name, json.loads(args)) for name, args in recover_calls(text, PARAMETERS)] == expected


def test_recover_all_says_which_rule_read_each_call():
    text = f"`t.py`:\n{F}python\nprint(1)\n{F}\n{F}sh\npython t.py\n{F}"
    assert recover_all(text, NAMES, lambda path: None)[1] == [("file-named", "write_file of t.py"),
                                                             ("sh-block", "run_shell of 'python t.py'")]
    assert recover_all(text, {"read_file", "write_file"}, lambda path: None) == (
        written("t.py", "print(1)\n"), [("file-named", "write_file of t.py")])
    text = f"{F}sh\nmkdir out\ncp *.txt out/\n{F}\n{F}python\nprint(2)\n{F}\n{LS}"
    assert recover_all(text, NAMES, lambda path: None)[1] == [
        ("sh-block", "run_shell of a 2-line command"), ("python-program", "run_shell of a 3-line command"),
        ("text-call", "run_shell of 'ls'")]


# One reply per rule in RULES, with the files the run has read: every call it holds is that rule's.
RULE_SAMPLES = {
    "text-call": (f"{F}json\n{LS}\n{F}", {}),
    "file-named": (f"Create `fizzbuzz.py`:\n{F}python\n{FIZZ}{F}", {}),
    "file-unnamed": (f"{F}python\ndef main():\n    print('HI')\n{F}", {"greet.py": "def main():\n    print('hi')\n"}),
    "splice-named": (f"The fixed median in `stats.py`:\n{F}python\ndef median(v):\n    return 0\n{F}", {"stats.py": STATS}),
    "splice-unnamed": (f"{F}python\ndef median(v):\n    return 0\n{F}", {"stats.py": STATS}),
    "sh-block": (f"{F}bash\nls -la\n{F}", {}),
    "python-program": (f"{F}python\nprint(2 + 2)\n{F}", {}),
    "python-shown-last": (f"{F}python\nx = 2\nx * 3\n{F}", {}),
}


def reported(text, files):
    return [rule for rule, _ in recover_all(text, PARAMETERS, files.get, read=list(files))[1]]


@pytest.mark.parametrize("rule", [name for name, _ in RULES])
def test_each_rule_is_reported_for_what_it_reads(rule):
    text, files = RULE_SAMPLES[rule]  # (a KeyError: a rule with no sample here)
    assert set(reported(text, files)) == {rule}


def test_every_rule_has_one_sample_and_a_distinct_kebab_case_name():
    names = [name for name, _ in RULES]
    assert sorted(RULE_SAMPLES) == sorted(names) and len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", name) for name in names)


@pytest.mark.parametrize("text, expected", [
    (f"{F}python\n5 * 5\n{F}\n{F}python\nprint(1)\n{F}", ["python-shown-last"]),  # a program too, but the value shown
    (f"{F}json\n{LS}\n{F}\n{F}sh\nls\n{F}", ["text-call"]),  # the same call again is not reported twice
    (f"{F}sh\npython t.py\n{F}\nOr:\n{F}bash\npython t.py\n{F}", ["sh-block"]),
])
def test_the_most_specific_rule_is_reported_once_per_call(text, expected):
    calls, rules = recover_all(text, PARAMETERS, lambda path: None)
    assert [rule for rule, _ in rules] == expected and len(calls) == len(rules)


def test_a_long_command_is_named_by_its_rule_not_quoted():
    text = f"{F}sh\necho {'x' * 70}\n{F}"
    assert recover_all(text, NAMES, lambda path: None)[1] == [("sh-block", "run_shell of a long command")]


# Seen from Qwen2.5-Coder-1.5B: a file put in a call as Python would write it, the same reply
# again after every note. (id, model reply, the content read, or None: not guessed at)
TQ = '"""'
HEAD = '{"name": "write_file", "arguments": {"path": "todo.py", "content": '
OPEN_ENDED = [
    # triple quotes, the closing braces never written
    ("triple-quotes-no-braces", f'{HEAD}{TQ}import json\nprint(json.dumps([1]))\n{TQ}', "import json\nprint(json.dumps([1]))\n"),
    # a fence stands for the closing quotes
    ("fence-for-the-quotes", f'{F}json\n{HEAD}{TQ}x = 1\nprint(x)\n{F}', "x = 1\nprint(x)\n"),
    # one quote, some inner quotes escaped and some not
    ("quotes-half-escaped", HEAD + r'"NAMES = ["a b", \"c\"]\nprint(f\"[{NAMES[0]}]\")"}}',
     'NAMES = ["a b", "c"]\nprint(f"[{NAMES[0]}]")'),
    # the file's own docstring opens with the delimiter, and some line breaks are escaped
    ("docstring-and-escapes", HEAD + TQ + r'Helpers.' + TQ + r'\n\n\ndef f():' + '\n    return 1\\n' + TQ + '}}',
     '"""Helpers."""\n\n\ndef f():\n    return 1\n'),
    # Not guessed at: prose after the call, a .py file no reading makes valid, a quote that is
    # escaped (the reply stopped mid-string), one line (no file), nothing in the string.
    ("prose-after", f'{HEAD}{TQ}x = 1\n{TQ}\nThen run it.', None),
    ("invalid-python", f'{HEAD}{TQ}def f(:\n{TQ}', None),
    ("ends-on-an-escaped-quote", HEAD + r'"print(\"hi\")\nprint(\"', None),
    ("one-line", HEAD + '"print("hi")"}}', None),
    ("empty", f'{HEAD}{TQ}', None),
]


@pytest.mark.parametrize("text, content", [case[1:] for case in OPEN_ENDED], ids=[case[0] for case in OPEN_ENDED])
def test_a_file_that_runs_to_the_end_of_the_reply(text, content):
    calls = recover_all(text, NAMES, lambda path: None)[0]
    assert calls == ([("write_file", json.dumps({"path": "todo.py", "content": content}))] if content else [])
    assert recover_all(text, NAMES, lambda path: None, whole=False)[0] == []  # cut off, or still streaming


def test_a_file_too_deep_to_compile_is_not_guessed_at():
    text = HEAD + '"""x = 1\n' + "y = 1" + "+1" * 1_000_000 + '\n"""'
    assert recover_all(text, NAMES, lambda path: None)[0] == []
