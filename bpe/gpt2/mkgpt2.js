// Writes gpt2.bin from GPT-2's encoder.json and vocab.bpe (argv[2], argv[3])
// to argv[4]: the id of each byte value 0..255, then the 50,000 merges as
// pairs of ids, all uint16 little-endian. mkgpt2.sh runs it.
"use strict";
const fs = require("fs");

const [encoderPath, vocabPath, outPath] = process.argv.slice(2);
const encoder = JSON.parse(fs.readFileSync(encoderPath, "utf8"));

// GPT-2 writes each byte as a printable character: the bytes that are
// printable Latin-1 (! to ~, ¡ to ¬, ® to ÿ) as themselves, the others, in
// byte order, as U+0100, U+0101, ... (so a space is "Ġ", U+0120).
const charOfByte = [];
let shifted = 0;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  charOfByte.push(String.fromCodePoint(printable ? b : 256 + shifted++));
}

const idOf = (tok) => {
  const id = encoder[tok];
  if (id === undefined) throw new Error(`token ${JSON.stringify(tok)} is not in encoder.json`);
  return id;
};

const lines = fs.readFileSync(vocabPath, "utf8").split("\n");
if (!lines[0].startsWith("#version")) throw new Error("vocab.bpe: no #version line");
const merges = lines.slice(1).filter((l) => l !== "").map((l) => {
  const parts = l.split(" ");
  if (parts.length !== 2) throw new Error(`vocab.bpe: line ${JSON.stringify(l)} is not two tokens`);
  return parts;
});

const out = Buffer.alloc(2 * (256 + 2 * merges.length));
let off = 0;
const put = (v) => { off = out.writeUInt16LE(v, off); };
charOfByte.forEach((c) => put(idOf(c)));
merges.forEach(([a, b], i) => {
  // gptg's bpe package numbers merge i as id 256+i; GPT-2's table does too.
  if (idOf(a + b) !== 256 + i) throw new Error(`merge ${i} (${a} ${b}) makes id ${idOf(a + b)}, not ${256 + i}`);
  put(idOf(a));
  put(idOf(b));
});
if (Object.keys(encoder).length !== 256 + merges.length + 1 || encoder["<|endoftext|>"] !== 256 + merges.length) {
  throw new Error("encoder.json is not the bytes, the merges and <|endoftext|>");
}
fs.writeFileSync(outPath, out);
