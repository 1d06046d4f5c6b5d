// The reference side of bench/tokenizers.sh: tiktoken (the npm build of
// its Rust core, WASM) and js-tiktoken (pure JavaScript) encoding and
// decoding a file with GPT-2's encoding, one thread. Each is warmed up on
// the text once, then timed 5 times; the medians are printed, of the wall
// time and of the CPU time (user and system, every thread of node):
//   node tokenizers.js FILE
//     → "NAME tokens encode_s decode_s encode_cpu_s decode_cpu_s" per library
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");
const { getEncoding } = require("js-tiktoken");

const text = fs.readFileSync(process.argv[2], "utf8");
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t = process.hrtime.bigint(), c = process.cpuUsage();
  const r = f();
  const dc = process.cpuUsage(c);
  return [Number(process.hrtime.bigint() - t) / 1e9, r, (dc.user + dc.system) / 1e6];
};

function bench(name, encode, decode) {
  let ids = encode(text); // warm-up
  decode(ids);
  const enc = [], dec = [], encCPU = [], decCPU = [];
  for (let i = 0; i < 5; i++) {
    let s, c;
    [s, ids, c] = time(() => encode(text));
    enc.push(s);
    encCPU.push(c);
    [s, , c] = time(() => decode(ids));
    dec.push(s);
    decCPU.push(c);
  }
  console.log(`${name} ${ids.length} ${[enc, dec, encCPU, decCPU].map((x) => median(x).toFixed(6)).join(" ")}`);
}

const wasm = get_encoding("gpt2");
bench("tiktoken", (t) => wasm.encode_ordinary(t), (ids) => wasm.decode(ids));
const js = getEncoding("gpt2");
bench("js-tiktoken", (t) => js.encode(t, [], []), (ids) => js.decode(ids));
