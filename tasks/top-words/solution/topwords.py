"""Print the three most common words of a text file: `word count`, ties alphabetical."""

import re
import sys
from collections import Counter

words = re.findall(r"[a-z]+", open(sys.argv[1]).read().lower())
for word, count in sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))[:3]:
    print(word, count)
