"""The English word list the readability test checks against (models/kjv-words.txt): the words
of Debian's wamerican list (/usr/share/dict/american-english, public domain: SCOWL's word
lists) that also occur in the King James text, lowercased, one a line.

    wordlist.py AMERICAN_ENGLISH KJV_TXT OUT

A subset of wamerican: a generated word found in it is a wamerican word, and the file stays
small (the model only writes words from its corpus)."""

import re
import sys


def words(text):
    # Letters and inner apostrophes ("LORD's"), lowercased: the test splits text the same way.
    return {w.strip("'").lower() for w in re.findall(r"[A-Za-z']+", text)} - {""}


def main(dict_path, kjv_path, out):
    english = {w.strip().lower() for w in open(dict_path, encoding="utf-8")}
    corpus = words(open(kjv_path, encoding="ascii").read())
    kept = sorted(corpus & english)
    with open(out, "w") as f:
        f.write("".join(w + "\n" for w in kept))
    print(f"{len(kept)} of the corpus's {len(corpus)} words are in wamerican's {len(english)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
