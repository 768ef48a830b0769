from wordcount import count_words

assert count_words("") == 0
assert count_words("hello") == 1
assert count_words("one two  three\nfour") == 4
print("ok")
