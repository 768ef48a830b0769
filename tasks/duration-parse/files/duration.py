"""Parse human durations such as "1h30m" into seconds."""


def parse_duration(text):
    """'1h30m' -> 5400. Units h, m, s, each at most once and in that order; raise ValueError otherwise."""
    # TODO
    pass
