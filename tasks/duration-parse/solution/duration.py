"""Parse human durations such as "1h30m" into seconds."""

import re


def parse_duration(text):
    """'1h30m' -> 5400. Units h, m, s, each at most once and in that order; raise ValueError otherwise."""
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not match:
        raise ValueError(f"not a duration: {text!r}")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    return hours * 3600 + minutes * 60 + seconds
