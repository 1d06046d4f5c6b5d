// Encodes standard input (UTF-8) with tiktoken's npm build (the WASM of
// its Rust core) and prints the ids as a JSON array: what tiktoken.py, the
// stand-in for the tiktoken Python package, asks of it.
// Usage: node encode.js ENCODING < TEXT
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");

const enc = get_encoding(process.argv[2]);
const text = fs.readFileSync(0, "utf8");
process.stdout.write(JSON.stringify(Array.from(enc.encode_ordinary(text))));
enc.free();
