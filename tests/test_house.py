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


def test_no_module_imports_itself_through_others():
    graph = {name: imports(path) for name, path in MODULES.items()}

    def reaches(start, goal, seen=()):
        return any(name == goal or (name not in seen and reaches(name, goal, (*seen, name))) for name in graph[start])

    cycles = [name for name in graph if reaches(name, name)]
    assert not cycles, f"import cycles through {cycles}"
    assert graph["agent"] >= {"tools", "prompts", "aids"}  # (the graph is read at all)
