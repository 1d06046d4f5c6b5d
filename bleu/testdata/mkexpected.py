#!/usr/bin/python3
"""Makes the expected numbers of package bleu's test, with NLTK's corpus_bleu.

    /usr/bin/python3 bleu/testdata/mkexpected.py      # from the repository root

Debian's python3-nltk (3.8 here) is the established implementation. NLTK scores
token lists and has no 13a tokenizer, so the 13a tokenization below is written
out in Python from its definition (mteval-v13a.pl as sacrebleu applies it:
sacrebleu's Tokenizer13a and TokenizerRegexp); its tokens are committed too
(*.13a.txt), so the Go test checks the tokenizer line by line and the scores to
1e-6 separately.

Inputs: ref.txt holds Spanish verses of the built-in corpus (every 40th line
of corpus/builtin/bible-en-es.tsv); hyp.txt and ref2.txt are made from them
here by seeded edits (words dropped, swapped, replaced, cut short), standing
in for a model's output and a second reference. tricky.txt holds lines for
13a's rules (numbers, dashes, entities, <skipped>, quotes).
"""
import json
import os
import random
import re
import sys

from nltk.translate.bleu_score import (brevity_penalty, closest_ref_length,
                                       corpus_bleu, modified_precision)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "corpus", "builtin", "bible-en-es.tsv")

RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tok13a(line):
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&")
                .replace("&lt;", "<").replace("&gt;", ">"))
    line = " " + line + " "
    for rx, repl in RULES:
        line = rx.sub(repl, line)
    return line.split()


def edit(words, rng):
    """A plausible imperfect translation: a few seeded edits of the reference."""
    w = list(words)
    for _ in range(rng.randint(0, 3)):
        if len(w) < 2:
            break
        op = rng.random()
        i = rng.randrange(len(w))
        if op < 0.3:
            del w[i]
        elif op < 0.55:
            j = min(i + 1, len(w) - 1)
            w[i], w[j] = w[j], w[i]
        elif op < 0.85:
            w[i] = rng.choice(["el", "la", "de", "y", "que", "Jehová", "dijo", "tierra", "casa"])
        else:
            w = w[: max(1, len(w) * 2 // 3)]
    return w


def make_inputs():
    spanish = [line.split("\t")[1] for line in open(CORPUS, encoding="utf-8")][::40]
    rng = random.Random(21)
    hyp = [" ".join(edit(s.split(), rng)) for s in spanish]
    ref2 = [" ".join(edit(s.split(), rng)) for s in spanish]
    for name, lines in (("ref.txt", spanish), ("hyp.txt", hyp), ("ref2.txt", ref2)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write("".join(l + "\n" for l in lines))


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def score(hyps, refsets, lowercase):
    low = (lambda s: s.lower()) if lowercase else (lambda s: s)
    h = [tok13a(low(s)) for s in hyps]
    r = [[tok13a(low(rs[i])) for rs in refsets] for i in range(len(hyps))]
    bleu = corpus_bleu(r, h)
    num, den = [0] * 4, [0] * 4
    for refs, hyp in zip(r, h):
        for n in range(1, 5):
            p = modified_precision(refs, hyp, n)
            num[n - 1] += p.numerator
            den[n - 1] += p.denominator
    hyp_len = sum(len(x) for x in h)
    ref_len = sum(closest_ref_length(refs, len(hyp)) for refs, hyp in zip(r, h))
    return dict(bleu=bleu, matches=num, totals=den, bp=brevity_penalty(ref_len, hyp_len),
                hyp_len=hyp_len, ref_len=ref_len)


def main():
    if "--inputs" in sys.argv:
        make_inputs()
    hyp, ref, ref2 = read("hyp.txt"), read("ref.txt"), read("ref2.txt")
    tricky = read("tricky.txt")
    for name in ("ref.txt", "hyp.txt", "tricky.txt"):
        with open(os.path.join(HERE, name.replace(".txt", ".13a.txt")), "w", encoding="utf-8") as f:
            f.write("".join(" ".join(tok13a(l)) + "\n" for l in read(name)))
    cases = [
        dict(name="one reference", hyp="hyp.txt", refs=["ref.txt"], lowercase=False),
        dict(name="one reference, lower-cased", hyp="hyp.txt", refs=["ref.txt"], lowercase=True),
        dict(name="two references", hyp="hyp.txt", refs=["ref.txt", "ref2.txt"], lowercase=False),
        dict(name="the first 20 hypotheses", hyp="hyp.txt", refs=["ref.txt"], lowercase=False, lines=20),
        dict(name="hypotheses cut to 3 words (brevity penalty)", hyp="hyp.txt", refs=["ref.txt"], lowercase=False, cut=3),
        dict(name="tricky lines against themselves reversed", hyp="tricky.txt", refs=["tricky.txt"], lowercase=False, reverse_refs=True),
    ]
    files = {"hyp.txt": hyp, "ref.txt": ref, "ref2.txt": ref2, "tricky.txt": tricky}
    for c in cases:
        n = c.get("lines", len(files[c["hyp"]]))
        hyps = files[c["hyp"]][:n]
        if "cut" in c:
            hyps = [" ".join(h.split()[: c["cut"]]) for h in hyps]
        refsets = [files[r][:n] for r in c["refs"]]
        if c.get("reverse_refs"):
            refsets = [list(reversed(rs)) for rs in refsets]
        c.update(score(hyps, refsets, c["lowercase"]))
    out = dict(made_by="bleu/testdata/mkexpected.py with NLTK %s" % __import__("nltk").__version__, cases=cases)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
