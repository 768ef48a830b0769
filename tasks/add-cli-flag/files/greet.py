"""Print a greeting."""

import argparse


def main():
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("--name", default="world", help="who to greet")
    args = parser.parse_args()
    message = f"Hello, {args.name}!"
    print(message)


if __name__ == "__main__":
    main()
