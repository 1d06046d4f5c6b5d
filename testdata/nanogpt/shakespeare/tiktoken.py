"""A stand-in for the tiktoken Python package, for mkbin.sh: nanoGPT's
prepare.py imports tiktoken, and this answers get_encoding(name)
.encode_ordinary(text) with the npm package tiktoken (the WASM build of
the same Rust core), which encode.js runs under node. Nothing else of
tiktoken's API is here."""

import json
import os
import subprocess

_ENCODE_JS = os.path.join(os.environ["GPTG_GOLDEN_DIR"], "encode.js")


class Encoding:
    def __init__(self, name):
        self.name = name

    def encode_ordinary(self, text):
        out = subprocess.run(["node", _ENCODE_JS, self.name], input=text.encode("utf-8"),
                             stdout=subprocess.PIPE, check=True)
        return json.loads(out.stdout)


def get_encoding(name):
    return Encoding(name)
