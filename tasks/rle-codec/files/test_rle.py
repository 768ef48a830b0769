import unittest

from rle import decode, encode


class RunLengthTest(unittest.TestCase):
    def test_encode(self):
        self.assertEqual(encode("aaabcc"), "3a1b2c")
        self.assertEqual(encode("abc"), "1a1b1c")

    def test_encode_empty(self):
        self.assertEqual(encode(""), "")

    def test_decode(self):
        self.assertEqual(decode("3a1b2c"), "aaabcc")

    def test_long_runs(self):
        self.assertEqual(encode("z" * 12), "12z")
        self.assertEqual(decode("10q"), "q" * 10)


if __name__ == "__main__":
    unittest.main()
