"""Files of any size: read_file reads a range of lines, write_file with `old` changes one part.

Every test runs the real agent (conftest's `run_agent`) against the scripted fake server over
real HTTP, with real files under tmp_path. The rule they pin: the model changes only what it has
seen. A file is replaced whole only once every line of it was shown (in one read or in parts);
an edit needs no read, because quoting `old` exactly, once, shows that part was seen.
"""

import json

import agent
import aids
import prompts
import tools
from fake_server import answer, call, reply

RENDER = '''

def render_{n}(shape):
    """Shape {n} as text."""
    parts = [shape.name, str(shape.size)]
    return " ".join(parts) + " #{n}"
'''


def results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def shapes(workspace) -> str:
    """A module of 1,500 lines: a header, then 250 functions of 6 lines each."""
    text = '"""Rendering of shapes."""\n' + "".join(RENDER.format(n=n) for n in range(250)).lstrip("\n") + "\n"
    text += "\n" * (1500 - tools.count_lines(text))
    assert tools.count_lines(text) == 1500 and len(text.encode()) > 5 * tools.READ_CAP
    (workspace / "shapes.py").write_text(text)
    return text


def test_a_1500_line_file_is_read_in_part_and_one_function_changed(run_agent, fake, workspace):
    before = shapes(workspace)
    old = '    parts = [shape.name, str(shape.size)]\n    return " ".join(parts) + " #200"\n'
    new = '    parts = [shape.name.upper(), str(shape.size)]\n    return " ".join(parts) + " #200"\n'
    check = ("python3 -c 'import types, shapes; "
             "print(shapes.render_200(types.SimpleNamespace(name=\"box\", size=3)))'")
    code, out, err = run_agent(
        reply(call("read_file", path="shapes.py")),
        reply(call("run_shell", command="grep -n 'def render_200' shapes.py")),
        reply(call("read_file", path="shapes.py", start=1202, lines=6)),
        reply(call("write_file", path="shapes.py", old=old, content=new)),
        reply(call("run_shell", command=check)),
        answer("render_200 now prints the name in capitals."), task="Make render_200 print the name in capitals.")
    assert code == 0
    assert "→ read_file shapes.py (start 1202 lines 6)" in err  # the person watching sees the range, and the edit:
    shown = [line.rstrip() for line in err.splitlines()]  # (rich pads the diff's lines)
    at = shown.index("→ write_file shapes.py")
    assert shown[at + 1:at + 5] == [f"-{line}" for line in old.splitlines()] + [f"+{line}" for line in new.splitlines()]
    head, grep, part, edit, ran = results(fake.requests[-1])
    first_lines = head.splitlines()
    assert first_lines[0] == '"""Rendering of shapes."""' and len(head.encode()) < tools.READ_CAP + 300
    assert first_lines[-1].startswith("[lines 1-")  # where it stops, and how to go on with read_file itself
    assert " of 1500 in shapes.py. To read on: read_file with start=" in first_lines[-1]
    assert "write_file with old (the exact text) and content (its replacement)" in first_lines[-1]
    assert grep == "exit code: 0\n--- stdout ---\n1202:def render_200(shape):\n"
    assert part == ('def render_200(shape):\n    """Shape 200 as text."""\n'
                    "    parts = [shape.name, str(shape.size)]\n    return \" \".join(parts) + \" #200\"\n\n\n"
                    "[lines 1202-1207 of 1500 in shapes.py. To read on: read_file with start=1208. To change a part: "
                    "write_file with old (the exact text) and content (its replacement).]")
    assert edit == "edited shapes.py: replaced lines 1204-1205 with 2 lines; the file has 1500 lines now"
    assert ran == "exit code: 0\n--- stdout ---\nBOX 3 #200\n"
    assert (workspace / "shapes.py").read_text() == before.replace(old, new)  # that function, nothing else


def test_a_file_read_in_part_is_not_replaced_whole_and_the_refusal_says_what_to_do(run_agent, fake, workspace):
    before = shapes(workspace)
    code, _, _ = run_agent(reply(call("read_file", path="shapes.py", start=1, lines=700)),
                           reply(call("write_file", path="shapes.py", content="print('all new')\n")),
                           reply(call("read_file", path="shapes.py", start=1400)),
                           reply(call("write_file", path="shapes.py", content="print('all new')\n")),
                           answer("rewritten"))
    first, refused, end, again = results(fake.requests[-1])
    shown = int(first.splitlines()[-1].split("-")[1].split(" ")[0])  # "[lines 1-N of 1500 ..."
    assert 100 < shown < 700  # the rest of the range did not fit in one read
    assert refused == (f"Error: Refused: 'shapes.py' has 1500 lines and you have read only some of them, so it "
                       "cannot be replaced whole: change a part with old (the exact text to replace) and content, "
                       f"or read on from line {shown + 1} (read_file with start) before writing it whole")
    assert end.splitlines()[-1].startswith("[lines 1400-1500 of 1500 in shapes.py (the end).")
    assert again == refused  # lines shown+1..1399 were never read
    assert (workspace / "shapes.py").read_text() == before


def test_a_file_read_on_to_its_end_in_parts_counts_as_read_whole(run_agent, fake, workspace):
    shapes(workspace)

    def read_on(request):  # follows the footer of the last read: "To read on: read_file with start=N."
        last = results(request)[-1] if results(request) else "start=1."
        if last.startswith("wrote"):
            return answer("rewritten")
        if "(the end)" in last:
            return reply(call("write_file", path="shapes.py", content="print('all new')\n"))
        return reply(call("read_file", path="shapes.py", start=int(last.split("start=")[1].split(".")[0])))

    code, _, _ = run_agent(*[read_on] * 20)
    assert code == 0
    *reads, written = results(fake.requests[-1])
    assert 5 <= len(reads) <= 11 and written == "wrote 17 bytes (1 lines) to shapes.py"
    assert (workspace / "shapes.py").read_text() == "print('all new')\n"


def test_an_edit_that_does_not_match_once_is_an_error_the_model_can_act_on(run_agent, fake, workspace):
    shapes(workspace)
    (workspace / "a.py").write_text("x = 1\ny = 1\n")
    run_agent(reply(call("write_file", path="shapes.py", old="def render_7(shape):\n  parts = [shape.name]\n", content="")),
              reply(call("write_file", path="a.py", old=" = 1\n", content=" = 2\n")),
              reply(call("write_file", path="a.py", old="", content="z")),
              reply(call("write_file", path="b.py", old="x", content="y")),
              reply(call("write_file", path="a.py", old="y = 1\n", content="y = (\n")),
              reply(call("write_file", path="a.py", old="y = 1\n", content="y = 2\n")),  # never read: quoting is enough
              answer("done"))
    missing, twice, empty, absent, broken, edited = results(fake.requests[-1])
    assert missing == ("Error: ValueError: old does not occur in shapes.py. The nearest text is at lines 44-45:\n"
                       'def render_7(shape):\n    """Shape 7 as text."""\n'
                       "Copy old exactly as the file has it, spaces and indentation too.")
    assert twice == ("Error: ValueError: old occurs 2 times in a.py (at lines 1, 2): give more of the lines around "
                     "it, so that it occurs once")
    assert empty.startswith("Error: Refused: 'a.py' exists") and "read" in empty  # old="" is a whole write: read first
    assert absent == "wrote 1 bytes (1 lines) to b.py (a new file: old was not used)"  # a placeholder old
    assert (workspace / "b.py").read_text() == "y"
    assert broken.startswith("Error: Refused: the new content is not valid Python (")
    assert broken.endswith("so a.py was left as it was; make the edit again with the error fixed")
    assert edited == "edited a.py: replaced lines 2-2 with 1 lines; the file has 2 lines now"
    assert (workspace / "a.py").read_text() == "x = 1\ny = 2\n"


def test_an_empty_old_is_a_whole_write(run_agent, fake, workspace):
    """Small models fill an optional argument they do not use with "": old="" writes the whole file."""
    (workspace / "a.py").write_text("x = 1\n")
    run_agent(reply(call("read_file", path="a.py")), reply(call("write_file", path="a.py", old="", content="x = 2\n")),
              answer("ok"))
    assert results(fake.requests[-1])[-1] == "wrote 6 bytes (1 lines) to a.py"
    assert (workspace / "a.py").read_text() == "x = 2\n"


def test_an_edit_keeps_windows_line_ends_and_bytes_that_are_not_utf8(run_agent, fake, workspace):
    (workspace / "a.txt").write_bytes(b"caf\xe9\r\none\r\ntwo\r\n")
    run_agent(reply(call("write_file", path="a.txt", old="one\ntwo\n", content="1\n2\n")), answer("ok"))
    assert results(fake.requests[-1]) == ["edited a.txt: replaced lines 2-3 with 2 lines; the file has 3 lines now"]
    assert (workspace / "a.txt").read_bytes() == b"caf\xe9\r\n1\r\n2\r\n"


def test_ranges_that_make_no_sense_and_nulls(run_agent, fake, workspace):
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    run_agent(reply(call("read_file", path="a.txt", start=9)), reply(call("read_file", path="a.txt", start=0)),
              reply(call("read_file", path="a.txt", start="2")), reply(call("read_file", path="a.txt", lines=True)),
              reply(call("read_file", path="a.txt", start=2, lines=None)),  # a null is an argument left out
              reply(call("read_file", path="a.txt", start=None, lines=None)), answer("ok"))
    past, zero, text, boolean, two, whole = results(fake.requests[-1])
    assert past == "Error: ValueError: start=9 is past the end: a.txt has 3 lines"
    assert zero == "Error: ValueError: start and lines must be 1 or more"
    assert text == "Error: start must be an integer" and boolean == "Error: lines must be an integer"
    assert two == ("two\nthree\n[lines 2-3 of 3 in a.txt (the end). To change a part: write_file with old (the exact "
                   "text) and content (its replacement).]")
    assert whole == "one\ntwo\nthree\n"  # a small file read whole is shown as it is, nothing added


def test_a_line_too_long_to_show_is_cut_and_never_counts_as_read(run_agent, fake, workspace):
    (workspace / "data.js").write_text("var x = '" + "a" * 10_000 + "';\nvar y = 1;\n")
    run_agent(reply(call("read_file", path="data.js")),
              reply(call("write_file", path="data.js", content="var y = 1;\n")), answer("ok"))
    shown, refused = results(fake.requests[-1])
    assert shown.endswith("\n[lines 1-1 of 2 in data.js; line 1 is cut at 6000 bytes. To read on: read_file with "
                          "start=2. To change a part: write_file with old (the exact text) and content (its replacement).]")
    assert len(shown) < tools.READ_CAP + 300
    assert refused.startswith("Error: Refused: 'data.js' has 2 lines and you have read only some of them")


def test_a_large_named_file_comes_as_its_head_and_counts_as_read_in_part(run_agent, fake, workspace):
    before = shapes(workspace)
    old = '    return " ".join(parts) + " #3"\n'
    code, _, _ = run_agent(reply(call("write_file", path="shapes.py", content="short\n")),
                           reply(call("write_file", path="shapes.py", old=old, content=old.replace("#3", "#three"))),
                           answer("done"), flags=["--file", "shapes.py"])
    first = [m["content"] for m in fake.requests[0]["messages"] if m["role"] == "user"][0]
    assert "\n\nshapes.py\n```\n\"\"\"Rendering of shapes.\"\"\"\n" in first
    assert " of 1500 in shapes.py. To read on: read_file with start=" in first
    refused, edited = results(fake.requests[-1])
    assert refused.startswith("Error: Refused: 'shapes.py' has 1500 lines and you have read only some of them")
    assert edited.startswith("edited shapes.py: replaced lines 23-23 with 1 lines")
    assert (workspace / "shapes.py").read_text() == before.replace(old, old.replace("#3", "#three"))


def test_an_edit_written_as_text_is_recovered_with_its_arguments(run_agent, fake, workspace):
    (workspace / "a.py").write_text("x = 1\ny = 1\n")
    edit = {"name": "write_file", "arguments": {"path": "a.py", "old": "y = 1\n", "content": "y = 2\n"}}
    code, _, err = run_agent(answer(f"```json\n{json.dumps(edit)}\n```"),
                             answer("read_file('a.py', 2, 1)"), answer("done"))
    assert code == 0 and "recovered 1 tool call(s)" in err
    edited, read = results(fake.requests[-1])
    assert edited == "edited a.py: replaced lines 2-2 with 1 lines; the file has 2 lines now"
    assert read.startswith("y = 2\n[lines 2-2 of 2 in a.py (the end).")  # positional: path, start, lines


def test_compaction_stubs_an_edits_old_text_as_well_as_its_content():
    arguments = json.dumps({"path": "a.py", "old": "x" * 300, "content": "y" * 300})
    shrunk = aids.without_file_body({"id": "1", "type": "function", "function": {"name": "write_file", "arguments": arguments}})
    assert json.loads(shrunk["function"]["arguments"]) == {"path": "a.py", "old": "[compacted]", "content": "[compacted]"}


def test_the_system_prompt_and_schemas_name_the_edit_form():
    assert "with old: one part of it" in prompts.SYSTEM_PROMPT
    write = next(t["function"] for t in tools.TOOLS if t["function"]["name"] == "write_file")
    assert write["parameters"]["required"] == ["path", "content"] and "old" in write["parameters"]["properties"]


def test_asked_for_approval_an_edit_shows_the_diff_of_the_whole_file(run_agent, fake, workspace, monkeypatch):
    import io
    import sys
    (workspace / "a.py").write_text("x = 1\ny = 1\nz = 1\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    code, _, err = run_agent(reply(call("write_file", path="a.py", old="y = 1\n", content="y = 2\n")), answer("ok"),
                             flags=["--approval", "ask", "--plain"])
    assert code == 0 and (workspace / "a.py").read_text() == "x = 1\ny = 2\nz = 1\n"
    lines = [line.rstrip() for line in err.splitlines()]
    at = lines.index("write a.py")
    assert lines[at + 1:at + 8] == ["--- a/a.py", "+++ b/a.py", "@@ -1,3 +1,3 @@", " x = 1", "-y = 1", "+y = 2", " z = 1"]
