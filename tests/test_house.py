"""The shape a learner relies on: the loop fits on one screen, and the modules form no cycle."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = {path.stem: path for path in ROOT.glob("*.py")}


def imports(path: Path) -> set[str]:
    """The project modules a module imports (at any depth of its code)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.partition(".")[0])
    return found & MODULES.keys()


def test_the_loop_fits_on_one_screen():
    tree = ast.parse((ROOT / "agent.py").read_text())
    run = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run")
    assert run.end_lineno - run.lineno + 1 <= 40


def test_agent_py_is_the_lesson_in_one_sitting():
    """agent.py at most 350 lines, none of its functions over 40, `run` within its first 100
    lines, and the three files the mission names at most 900 lines together."""
    source = (ROOT / "agent.py").read_text()
    tree = ast.parse(source)
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    run = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run")
    assert len(source.splitlines()) <= 350 and run.lineno <= 100
    assert not [f.name for f in functions if f.end_lineno - f.lineno + 1 > 40]
    assert sum(len((ROOT / name).read_text().splitlines()) for name in ("agent.py", "tools.py", "prompts.py")) <= 900


def test_no_module_imports_itself_through_others():
    graph = {name: imports(path) for name, path in MODULES.items()}

    def reaches(start, goal, seen=()):
        return any(name == goal or (name not in seen and reaches(name, goal, (*seen, name))) for name in graph[start])

    cycles = [name for name in graph if reaches(name, name)]
    assert not cycles, f"import cycles through {cycles}"
    assert graph["agent"] >= {"tools", "prompts", "aids"}  # (the graph is read at all)
