#!/usr/bin/env python3
"""An independent reference for bpe.Learn: it writes the golden files of
bpe/learn_test.go (bpe/testdata/learn/*.json).

It follows the training algorithm of minbpe's RegexTokenizer (github.com/
karpathy/minbpe, minbpe/regex.py): GPT-2's pre-split, every piece as its
UTF-8 bytes, and each round a full recount of the adjacent pairs within
pieces (overlapping occurrences counted, as get_stats does) and a left-to-right
non-overlapping merge of the most frequent pair into the next id. Two
differences from minbpe, neither changing the algorithm: the count of a
repeated piece is its count once times its number of occurrences, and ties
are broken by the rule gptg states (highest count, then lowest left id, then
lowest right id) instead of by the dict order minbpe's max() happens to see.
Encoding is minbpe's _encode_chunk: in each piece, merge the pair of lowest
rank, all its occurrences left to right, until no pair has a rank.

Nothing here is shared with the Go code: the pre-split is the regex module
running GPT-2's pattern itself. It needs the `regex` module (Debian:
python3-regex; pip: regex) and plain Python 3 otherwise.

    python3 bpe/testdata/learnref.py     # from anywhere; a few minutes
"""

import json
import os
import sys

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPLIT = regex.compile(GPT2_PATTERN)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "bpe", "testdata", "learn")


def pieces_of(text):
    """Distinct pieces of text as tuples of byte ids, with their counts."""
    counts = {}
    for p in SPLIT.findall(text):
        ids = tuple(p.encode("utf-8"))
        counts[ids] = counts.get(ids, 0) + 1
    return counts


def stats(pieces):
    """Occurrences of every adjacent pair, overlaps included."""
    out = {}
    for ids, n in pieces.items():
        for pair in zip(ids, ids[1:]):
            out[pair] = out.get(pair, 0) + n
    return out


def merged(ids, pair, new):
    """ids with every occurrence of pair, left to right, replaced by new."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train(text, num_merges):
    """Up to num_merges merges, fewer when no pair is left, and how often
    each merge's pair occurred when it was merged."""
    pieces = pieces_of(text)
    merges, counts = [], []
    for i in range(num_merges):
        st = stats(pieces)
        if not st:
            break
        # highest count; of those the lowest (left, right)
        pair = min(st, key=lambda p: (-st[p], p[0], p[1]))
        new = 256 + i
        nxt = {}
        for ids, n in pieces.items():
            m = tuple(merged(ids, pair, new))
            nxt[m] = nxt.get(m, 0) + n
        pieces = nxt
        merges.append(pair)
        counts.append(st[pair])
    return merges, counts


def encode(text, merges):
    rank = {pair: i for i, pair in enumerate(merges)}
    out = []
    for p in SPLIT.findall(text):
        ids = list(p.encode("utf-8"))
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda q: rank.get(q, float("inf")))
            if pair not in rank:
                break
            ids = merged(ids, pair, 256 + rank[pair])
        out.extend(ids)
    return out


def line_slice(data, start, length):
    """The bytes [start, end) of data: end is start+length moved back to
    just after a newline, so the slice is whole lines of UTF-8."""
    end = data.rindex(b"\n", start, start + length) + 1
    return start, end


def split_end(data, split):
    """Where tokenizer = "bpe" ends the training split of data: the first
    space, tab, CR or LF at or after int(len(data) * split) that follows
    an ASCII character other than white space."""
    i = max(1, int(len(data) * split))
    while i < len(data):
        if data[i] in b" \t\r\n" and data[i - 1] < 0x80 and data[i - 1] not in b" \t\n\v\f\r":
            return i
        i += 1
    raise ValueError("no cut after the split")


def case(name, path, start, length, heldout_length, vocab_sizes, split=None):
    """Golden files for the whole lines in about length bytes of path from
    start, and the about heldout_length bytes after them; a heldout_length
    of 0 means the text itself. With split, the text is the training split
    of the whole file as tokenizer = "bpe" cuts it, and the held-out text
    its test split."""
    with open(os.path.join(ROOT, path), "rb") as f:
        data = f.read()
    if split is not None:
        start, end = 0, split_end(data, split)
        held_start, held_end = end, len(data)
    else:
        start, end = line_slice(data, start, length)
        held_start, held_end = start, end
        if heldout_length > 0:
            held_start, held_end = line_slice(data, end, heldout_length)
    text = data[start:end].decode("utf-8")
    held = data[held_start:held_end].decode("utf-8")
    for vs in vocab_sizes:
        merges, counts = train(text, vs - 256)
        golden = {
            "file": path,
            "start": start,
            "end": end,
            "heldout_start": held_start,
            "heldout_end": held_end,
            "vocab_size": vs,
            "merges": [list(p) for p in merges],
            "counts": counts,
            "heldout_ids": encode(held, merges),
        }
        out = os.path.join(OUT, "%s-%d.json" % (name, vs))
        with open(out, "w") as f:
            json.dump(golden, f, separators=(",", ":"))
            f.write("\n")
        print("%s: %d merges, %d held-out ids" % (out, len(merges), len(golden["heldout_ids"])))


def main():
    os.makedirs(OUT, exist_ok=True)
    shakespeare = "corpus/builtin/tinyshakespeare.txt"
    bible = "corpus/builtin/bible-en-es.tsv"
    case("shakespeare", shakespeare, 0, 100_000, 20_000, [256 + 64, 256 + 512])
    case("bible", bible, 1_000_000, 100_000, 20_000, [256 + 512, 256 + 2048])
    # The training split of a whole corpus at 4,096 merges (about two
    # minutes of this script's time).
    case("shakespeare-split", shakespeare, 0, 0, 0, [256 + 4096], split=0.9)
    # Small texts run out of pairs: the golden merges are all there are.
    case("ties", "bpe/testdata/ties.txt", 0, 1 << 20, 0, [256 + 1000])


if __name__ == "__main__":
    sys.exit(main())
