"""Turn titles into URL slugs."""


def slugify(title: str) -> str:
    """Lower-case the title and join its runs of letters and digits with single hyphens.

    Everything that is not an ASCII letter or digit separates words; the slug never starts or
    ends with a hyphen. 'Hello, World!' -> 'hello-world'
    """
    raise NotImplementedError
