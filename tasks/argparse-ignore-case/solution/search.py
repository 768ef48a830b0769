"""Print the lines of FILE that contain PATTERN, each with its line number."""

import argparse

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("pattern")
parser.add_argument("file")
parser.add_argument("-i", "--ignore-case", action="store_true", help="match upper and lower case alike")
args = parser.parse_args()

with open(args.file) as f:
    for number, line in enumerate(f, 1):
        if (args.pattern.lower() in line.lower()) if args.ignore_case else (args.pattern in line):
            print(f"{number}: {line.rstrip()}")
