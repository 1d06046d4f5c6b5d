// Writes the golden token ids of gptg's bpe tests: each input file encoded
// by tiktoken (the npm build of its Rust core, WASM) with encoding "gpt2"
// (r50k_base), as uint16 little-endian, gzipped, into golden/NAME.gpt2.bin.gz;
// and allcodepoints.gpt2.sha256, the digest of the ids of a text made of
// every code point (allCodePointsText, which bpe's tests build alike).
// js-tiktoken (pure JavaScript) must give the same ids for the built-in
// corpora, or this stops; where it differs on stress.txt the lines are
// listed in golden/js-tiktoken.txt (its JavaScript regex counts U+FEFF but
// not U+0085 as whitespace, and knows letters of a newer Unicode).
// mkgolden.sh runs it: node mkgolden.js FILE...
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const crypto = require("crypto");
const { get_encoding } = require("tiktoken");
const { getEncoding } = require("js-tiktoken");

const wasm = get_encoding("gpt2");
const js = getEncoding("gpt2");

function idsBytes(ids) {
  const buf = Buffer.alloc(2 * ids.length);
  ids.forEach((id, i) => buf.writeUInt16LE(id, 2 * i));
  return buf;
}

// js-tiktoken has no encode_ordinary: with no special token allowed and
// none disallowed, it encodes "<|endoftext|>" as text too.
const jsEncode = (text) => js.encode(text, [], []);
const same = (a, b) => a.length === b.length && a.every((id, i) => id === b[i]);

function encode(text, what, checkJS) {
  const ids = Array.from(wasm.encode_ordinary(text));
  if (checkJS && !same(ids, jsEncode(text))) {
    throw new Error(`${what}: tiktoken and js-tiktoken differ`);
  }
  return ids;
}

// jsDifferences lists the lines of text js-tiktoken encodes differently.
function jsDifferences(text) {
  const out = [];
  text.split("\n").forEach((line, i) => {
    if (!same(Array.from(wasm.encode_ordinary(line)), jsEncode(line))) {
      const odd = [...line].filter((ch) => ch.codePointAt(0) > 0x7e || ch.codePointAt(0) < 0x20)
        .map((ch) => "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0"));
      out.push(`line ${i + 1}: ${[...new Set(odd)].slice(0, 6).join(" ")}`);
    }
  });
  return out;
}

// Every code point of planes 0 to 3 and the start of 14 (where all
// assigned ones are) but the surrogates, each in contexts that show its
// class to the pre-split: after a letter, before a digit, after a space,
// before "'s" (which is one token only if c is a letter, number or space)
// and doubled.
function allCodePointsText() {
  const parts = [];
  for (let c = 0; c < 0xe1000; c++) {
    if ((c >= 0xd800 && c < 0xe000) || (c >= 0x40000 && c < 0xe0000)) continue;
    const ch = String.fromCodePoint(c);
    parts.push("A" + ch + "1 " + ch + "'s" + ch + ch + " ");
  }
  return parts.join("");
}

const outDir = path.join(__dirname, "golden");
fs.mkdirSync(outDir, { recursive: true });
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  const name = path.basename(file).replace(/\.[^.]*$/, "");
  const ids = encode(text, name, name !== "stress");
  if (name === "stress") {
    const diff = jsDifferences(text);
    fs.writeFileSync(path.join(outDir, "js-tiktoken.txt"),
      `Lines of stress.txt that js-tiktoken encodes unlike tiktoken (non-ASCII code points on each):\n${diff.join("\n")}\n`);
  }
  fs.writeFileSync(path.join(outDir, `${name}.gpt2.bin.gz`), zlib.gzipSync(idsBytes(ids), { level: 9 }));
  console.log(`${name}: ${Buffer.byteLength(text)} bytes, ${ids.length} tokens`);
}
const all = encode(allCodePointsText(), "all code points", false);
const digest = crypto.createHash("sha256").update(idsBytes(all)).digest("hex");
fs.writeFileSync(path.join(outDir, "allcodepoints.gpt2.sha256"), `${digest} ${all.length}\n`);
console.log(`all code points: ${all.length} tokens, sha256 ${digest}`);
