"""Small helpers to tidy up names typed by people."""


def normalize(name):
    """Collapse runs of spaces and capitalise each word: '  ada   LOVELACE ' -> 'Ada Lovelace'."""
    cleaned = " ".join(name.split())
    cleaned = cleaned.title()


def initials(name):
    """'Ada Lovelace' -> 'A.L.'"""
    return "".join(part[0].upper() + "." for part in name.split())
