"""Print a greeting."""

import argparse


def main():
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("--name", default="world", help="who to greet")
    parser.add_argument("--shout", action="store_true", help="print the greeting in upper case")
    args = parser.parse_args()
    message = f"Hello, {args.name}!"
    if args.shout:
        message = message.upper()
    print(message)


if __name__ == "__main__":
    main()
