"""List the tasks in todo.json: `python todo.py` shows the open ones, `--all` the finished ones too."""

import argparse
import json

parser = argparse.ArgumentParser(description="List the tasks in todo.json.")
parser.add_argument("--all", action="store_true", help="show finished tasks too")
args = parser.parse_args()

with open("todo.json") as f:
    tasks = json.load(f)
for task in tasks:
    if task["done"] and not args.all:
        continue
    print(f"[{'x' if task['done'] else ' '}] {task['title']}")
