"""Writes bf16golden.txt: float32 values and the bfloat16 PyTorch rounds
each to with .to(torch.bfloat16), the reference for gptg export --dtype
bfloat16 (modelfile's TestBF16RoundingMatchesPyTorch).

Run from the repository root: /usr/bin/python3 modelfile/testdata/bf16golden.py

Each line: the float32's bits, the bfloat16's bits (hex), and a comment.
The values: ties and their neighbours (even and odd kept bit), subnormals
(PyTorch rounds them, it does not flush them), the largest finite floats
(some round to infinity), infinities, zeros, NaNs of several payloads,
then random bit patterns from a fixed seed.
"""
import os
import random
import struct

import torch

named = [
    (0x3F800000, "1"),
    (0x3F808000, "tie between 1 and 1+2^-7: to the even 1"),
    (0x3F808001, "just above that tie: up"),
    (0x3F807FFF, "just below that tie: down"),
    (0x3F818000, "tie with an odd kept bit: up to the even"),
    (0x3F817FFF, "just below an odd tie: down"),
    (0xBF818000, "negative odd tie: away from zero, to the even"),
    (0xBF808000, "negative even tie: toward zero"),
    (0x40490FDB, "pi"),
    (0x3DCCCCCD, "0.1"),
    (0x00000001, "smallest subnormal: rounds to +0"),
    (0x80000001, "smallest negative subnormal: rounds to -0"),
    (0x00008000, "subnormal tie, even: down to 0"),
    (0x00018000, "subnormal tie, odd: up"),
    (0x00010000, "a subnormal bfloat16 exactly"),
    (0x00012345, "subnormal, down"),
    (0x0000C000, "subnormal above a tie: up"),
    (0x007FFFFF, "largest subnormal: up to the smallest normal"),
    (0x807FFFFF, "largest negative subnormal"),
    (0x00800000, "smallest normal"),
    (0x7F7FFFFF, "largest float32: to infinity"),
    (0xFF7FFFFF, "most negative float32: to -infinity"),
    (0x7F7F7FFF, "below the largest bfloat16's tie: the largest bfloat16"),
    (0x7F7F8000, "tie at the largest bfloat16 (odd): to infinity"),
    (0x7F7E8000, "tie below it (even): down"),
    (0x7F000000, "2^127"),
    (0x7F800000, "+infinity"),
    (0xFF800000, "-infinity"),
    (0x00000000, "+0"),
    (0x80000000, "-0"),
    (0x7FC00000, "quiet NaN"),
    (0xFFC00000, "negative quiet NaN"),
    (0x7F800001, "signalling NaN, payload in the low bits only"),
    (0x7FFFFFFF, "NaN, all payload bits"),
    (0xFFFFFFFF, "negative NaN, all payload bits"),
    (0x7FBFFFFF, "signalling NaN, payload that would carry"),
]

rng = random.Random(20261206)
values = named + [(rng.getrandbits(32), "random") for _ in range(2000)]

# Built from the bits, not from Python floats: a signalling NaN would be
# quieted on its way through a double.
bits = [struct.unpack("<i", struct.pack("<I", b))[0] for b, _ in values]
x = torch.tensor(bits, dtype=torch.int32).view(torch.float32)
assert [v & 0xFFFFFFFF for v in x.view(torch.int32).tolist()] == [b for b, _ in values]
got = x.to(torch.bfloat16).view(torch.int16).tolist()

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bf16golden.txt")
with open(out, "w") as f:
    f.write("# float32 bits, bfloat16 bits from PyTorch %s's .to(torch.bfloat16); made by bf16golden.py\n" % torch.__version__)
    for (bits, note), r in zip(values, got):
        f.write("%08x %04x %s\n" % (bits, r & 0xFFFF, note))
