"""List the tasks in todo.json: `python todo.py` shows the open ones, `--all` the finished ones too."""

import argparse
import json

parser = argparse.ArgumentParser(description="List the tasks in todo.json.")
parser.add_argument("--all", action="store_true", help="show finished tasks too")
parser.add_argument("--limit", type=int, metavar="N", help="show at most N tasks")
args = parser.parse_args()

with open("todo.json") as f:
    tasks = json.load(f)
shown = [task for task in tasks if args.all or not task["done"]]
if args.limit is not None:
    shown = shown[:args.limit]
for task in shown:
    print(f"[{'x' if task['done'] else ' '}] {task['title']}")
