#!/usr/bin/env python3
# File: make_corpus.py
# Writes data/corpus.txt: a deterministic, generated English-like text (about 300 KB) for the
# whale-run demo and tests. Usage: python3 scripts/make_corpus.py [OUT] [BYTES]
import random
import sys

SUBJECTS = ["the whale", "a small boat", "the old captain", "the crew", "a gray gull",
            "the harbor master", "my sister", "the young sailor", "the lighthouse keeper",
            "a fisherman", "the cook", "the navigator", "our neighbor", "the storm"]
VERBS = ["watched", "followed", "found", "carried", "remembered", "painted", "heard",
         "crossed", "guarded", "described", "repaired", "called", "measured", "avoided"]
OBJECTS = ["the long coast", "a quiet bay", "the northern light", "a broken mast",
           "the cold water", "a map of the islands", "the evening tide", "a bright lantern",
           "the rocky shore", "a basket of bread", "the distant ship", "the wooden pier",
           "a song about the sea", "the silver fish"]
PLACES = ["near the harbor", "at dawn", "before the rain", "under the cliffs",
          "in the fog", "after supper", "across the strait", "beside the old church",
          "during the winter", "on the open sea"]
CONNECTIVES = ["and then", "because", "while", "although", "so", "but"]
ADJECTIVES = ["calm", "restless", "patient", "tired", "cheerful", "silent", "careful"]


def clause(rng):
    parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if rng.random() < 0.5:
        parts.append(rng.choice(PLACES))
    return " ".join(parts)


def sentence(rng):
    roll = rng.random()
    if roll < 0.2:
        text = f"{rng.choice(SUBJECTS)} was {rng.choice(ADJECTIVES)} {rng.choice(PLACES)}"
    elif roll < 0.6:
        text = f"{clause(rng)} {rng.choice(CONNECTIVES)} {clause(rng)}"
    else:
        text = clause(rng)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "!", "?"])


def corpus(target_bytes, seed=20240607):
    rng = random.Random(seed)
    paragraphs, size = [], 0
    while size < target_bytes:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs) + "\n"


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "data/corpus.txt"
    target = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
    with open(out, "w", encoding="ascii") as f:
        f.write(corpus(target))
