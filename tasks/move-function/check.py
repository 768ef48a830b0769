"""Check for move-function: parse_date is defined in dates.py only, orders.py and billing.py import
it from dates, and both scripts print what they printed before.

Run as `python check.py WORKSPACE ANSWER_FILE`; exits 0 only if solved, else says why. The source
is read with ast, so comments and strings do not count, and parse_date is called on dates the
scripts do not use.
"""

import ast
import subprocess
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
OUTPUT = {"billing.py": "March: 4 orders, 552.75 in total\nfirst order: 2024-03-02\n",
          "orders.py": "A-17 2024-03-02 120.0\nA-18 2024-03-02 80.5\nA-19 2024-03-15 42.25\nA-20 2024-03-28 310.0\n"}


def tree(name: str) -> ast.Module:
    try:
        return ast.parse((workspace / name).read_text())
    except (OSError, SyntaxError) as error:
        sys.exit(f"{name} cannot be read: {error}")


def defines(module: ast.Module) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "parse_date" for n in module.body)


def imports_from_dates(module: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "dates" and any(a.name == "parse_date" for a in n.names)
               or isinstance(n, ast.Import) and any(a.name == "dates" for a in n.names) for n in ast.walk(module))


if not defines(tree("dates.py")):
    sys.exit("dates.py does not define parse_date")
if defines(tree("orders.py")):
    sys.exit("orders.py still defines parse_date")
for name in ("orders.py", "billing.py"):
    if not imports_from_dates(tree(name)):
        sys.exit(f"{name} does not import parse_date from dates")
billing_from_orders = [a.name for n in ast.walk(tree("billing.py")) if isinstance(n, ast.ImportFrom)
                       and n.module == "orders" for a in n.names]
if "parse_date" in billing_from_orders:
    sys.exit("billing.py still imports parse_date from orders")


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=workspace, capture_output=True, text=True, timeout=20)


for script, expected in OUTPUT.items():
    run = python(script)
    if run.returncode != 0 or run.stdout != expected:
        sys.exit(f"`python {script}` exited {run.returncode} and printed {run.stdout[:200]!r} {run.stderr[-200:]!r}")
api = python("-c", "from datetime import date\nfrom dates import parse_date\n"
                   "assert parse_date('31/12/1999') == date(1999, 12, 31) and parse_date('2000-01-09') == date(2000, 1, 9)")
if api.returncode != 0:
    sys.exit(f"dates.parse_date is wrong: {api.stderr[-200:]!r}")
