"""`text`: next-character prediction on real English prose, Ambrose Bierce's *The Devil's
Dictionary* (1911, public domain), x and y [N, context] token ids.

The corpus (devils_dictionary.txt, 383,157 ASCII characters) is the text of Debian's
`dict-devil` package (/usr/share/dictd/devil.dict.dz, the Internet Wiretap edition of
1993) from its title to its last entry, without the dictd index header. Its 84 distinct
characters, in code-point order, are the vocabulary: a character's token id is its rank.

Samples are the corpus cut into blocks of `context` characters, one after the other
(k·context … (k+1)·context − 1); each one's labels are the characters one further on, so
the model predicts the next character at every position. The last block that has a next
character for each position ends the dataset.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

SOURCE = "devils_dictionary.txt"


@cache
def corpus() -> str:
    """The corpus, as shipped in this package."""
    return resources.files(__package__).joinpath(SOURCE).read_text(encoding="ascii")


@cache
def vocabulary() -> str:
    """The corpus's distinct characters in code-point order: token id i is the i-th."""
    return "".join(sorted(set(corpus())))


def samples(context: int) -> int:
    """How many blocks of ``context`` characters the corpus gives, each with its next ones."""
    return (len(corpus()) - 1) // context


def arrays(context: int) -> tuple[list[int], list[int]]:
    """x: each block's token ids; y: the ids one character further on."""
    ids = {c: i for i, c in enumerate(vocabulary())}
    tokens = [ids[c] for c in corpus()]
    n = samples(context) * context
    return tokens[:n], tokens[1 : n + 1]
