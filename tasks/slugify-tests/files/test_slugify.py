import unittest

from slugify import slugify


class SlugifyTest(unittest.TestCase):
    def test_punctuation_goes(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_digits_stay(self):
        self.assertEqual(slugify("  Python 3.11 is out  "), "python-3-11-is-out")

    def test_already_a_slug(self):
        self.assertEqual(slugify("already-a-slug"), "already-a-slug")

    def test_apostrophe(self):
        self.assertEqual(slugify("C'est la vie"), "c-est-la-vie")

    def test_empty(self):
        self.assertEqual(slugify(""), "")


if __name__ == "__main__":
    unittest.main()
