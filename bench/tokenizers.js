// The reference side of bench/tokenizers.sh: tiktoken (the npm build of
// its Rust core, WASM) and js-tiktoken (pure JavaScript) encoding and
// decoding a file with GPT-2's encoding, one thread. Each is warmed up on
// the text once, then timed 5 times; the median is printed:
//   node tokenizers.js FILE   →  "NAME tokens encode_s decode_s" per library
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");
const { getEncoding } = require("js-tiktoken");

const text = fs.readFileSync(process.argv[2], "utf8");
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => { const t = process.hrtime.bigint(); const r = f(); return [Number(process.hrtime.bigint() - t) / 1e9, r]; };

function bench(name, encode, decode) {
  let ids = encode(text); // warm-up
  decode(ids);
  const enc = [], dec = [];
  for (let i = 0; i < 5; i++) {
    let s;
    [s, ids] = time(() => encode(text));
    enc.push(s);
    [s] = time(() => decode(ids));
    dec.push(s);
  }
  console.log(`${name} ${ids.length} ${median(enc).toFixed(6)} ${median(dec).toFixed(6)}`);
}

const wasm = get_encoding("gpt2");
bench("tiktoken", (t) => wasm.encode_ordinary(t), (ids) => wasm.decode(ids));
const js = getEncoding("gpt2");
bench("js-tiktoken", (t) => js.encode(t, [], []), (ids) => js.decode(ids));
