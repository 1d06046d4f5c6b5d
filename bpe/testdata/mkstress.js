// Writes stress.txt, the text the golden tests put through tiktoken beside
// the built-in corpora: every Unicode general category, emoji and their
// ZWJ sequences, CJK, combining marks, right-to-left text, contractions in
// every case, whitespace runs of every kind, digits and long runs. It is
// deterministic (no randomness): node mkstress.js > stress.txt.
"use strict";

const out = [];
const line = (...parts) => out.push(parts.join(""));
const cp = (c) => String.fromCodePoint(c);

// Every general category: up to 12 of its characters spread over the code
// space, each alone, after a space, between letters and doubled.
const categories = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
  "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"];
for (const gc of categories) {
  const re = new RegExp(`^\\p{gc=${gc}}$`, "u");
  const members = [];
  for (let c = 0; c < 0x110000; c++) {
    if (c >= 0xd800 && c < 0xe000) continue; // Cs: surrogates are not text
    if (re.test(cp(c))) members.push(c);
  }
  const picked = new Set([members[0], members[members.length - 1]]);
  for (let i = 1; i <= 10; i++) picked.add(members[Math.floor((i * members.length) / 11)]);
  for (const c of [...picked].sort((a, b) => a - b)) {
    const ch = cp(c);
    line(gc, " U+", c.toString(16).toUpperCase(), ": ", ch, " ", ch, ch, " a", ch, "b ", ch, "1 1", ch, " ", ch, "'s ", ch);
  }
}

// The pre-split's edge cases.
line("'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'Re 'rE 'Ll 'lL");
line("it's I'M he'd we'll they're you've she'S don't DON'T o'clock rock'n'roll ''s '''t 's's");
line("'", "s", "'x 'r 'v 'l ' s '", "");
line("James' ", "'tis 'twas ’s ‘t (it's) \"it's\" [he'll] it’s");
const spaces = ["\t", "\n", "\v", "\f", "\r", " ", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
  "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
  "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"];
// Not whitespace to the pattern, though some tools think so.
const notSpaces = ["\u001c", "\u001d", "\u001e", "\u001f", "\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"];
for (const s of [...spaces, ...notSpaces]) {
  for (const n of [1, 2, 3]) {
    const run = s.repeat(n);
    line("x", run, "word", run, "1", run, "!", run, " ", run, "end", run);
    line(run, "a", " ", run, "b", run, " c", s, " ", s, "d");
  }
}
line("mixed \t \n\t  \r\n \u00a0 \u3000word  \t\n\u2028  tail");
line("a\r\nb\r\n\r\nc \r\n d\n\r e\r\r\n");
line("     leading five", "  two", "   three", "\t\ttabs", "  \n  lines");
line("trailing spaces   ");
line("trailing tabs\t\t");
line("trailing mixed \t \u00a0");

// Digits: ASCII, other scripts, numbers that are not digits.
line("0 1 12 123 1234 12345 123456 1234567 12345678901234567890 3.14159 1,000,000 -42 +7 1e10 0x1F 2024-01-01 12:34:56");
line("٠١٢٣٤٥٦٧٨٩ ۰۱۲ ०१२३ ০১২ ๐๑๒ ０１２３ ²³¹ ½¼¾ ⅠⅡⅢⅫ ⅰⅱ ①②③ 𝟎𝟏𝟐 𐄇𐄈");
line("a1b2c3 1a2b3c 1.2.3 v1.0.0 $100 100% 50/50 #1 @2");

// Punctuation runs.
line("!!! ??? ... --- *** ### $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} <<< >>> ||| ~~~ ``` \\\\\\ /// ;;; ::: ,,, ___ === +++");
line("!?.,;:-_()[]{}<>/\\|@#$%^&*~`'\"+= «»„“”‘’‹›—–…·•※‼⁇");
line("<|endoftext|> <|endoftext|><|endoftext|> <|endoftext <|fim_prefix|>");

// Emoji: plain, skin tones, ZWJ families and professions, flags, keycaps,
// variation selectors, tags.
line("😀 😃😄 👍 👍🏻 👍🏿 ❤️ ❤ ♥️ ✨ 🎉🎉🎉");
line("👨‍👩‍👧‍👦 👩‍❤️‍💋‍👨 🧑‍🚀 👩🏽‍💻 🏳️‍🌈 🏳️‍⚧️ 🐕‍🦺 🧔‍♂️ 👁️‍🗨️");
line("🇺🇸🇪🇸🇯🇵 🇬🇧 🏴󠁧󠁢󠁳󠁣󠁴󠁿 1️⃣ #️⃣ *️⃣ ©️ ®️ ™️");
line("word😀word 😀word word😀 😀1 1😀 😀!");

// CJK and other scripts.
line("我爱自然语言处理。今天天气很好！ 中文，标点；“引号”");
line("日本語のテキストです。カタカナとひらがな、漢字。ｶﾀｶﾅ");
line("한국어 텍스트입니다. 안녕하세요! ㄱㄴㄷ");
line("Привет, мир! Ελληνικά κείμενα. Українська мова. Ђорђе");
line("हिन्दी भाषा। தமிழ் மொழி ไทยภาษา ລາວ ქართული Հայերեն አማርኛ");

// Combining marks: precomposed and decomposed, stacked, on digits and spaces.
line("é é ñ ñ Å Å ṩ ṩ ẛ̣ a\u0301\u0302\u0303\u0304 1\u0301 \u0301 \u0301a x\u20dd ñ\u0303\u0303");
line("Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333");

// Right-to-left text, with marks and embedded left-to-right runs.
line("العربية: مرحبا بالعالم! ٣ أرقام. עברית: שלום עולם, 123.");
line("\u200fRLM\u200e LRM \u202bembedded\u202c \u2067isolate\u2069 ﷺ ﷽ ؀");
line("mixed עברית and English ومزيج");

// Controls and the NUL byte.
line("nul\u0000byte \u0000\u0000 bell\u0007 esc\u001b[0m del\u007f c1\u0080\u009f");

// Long repeated runs: each longer than the merge loop's short-piece limit.
line("a".repeat(1000));
line(" ".repeat(1000), "x");
line("!".repeat(500));
line("1".repeat(300));
line("ab".repeat(400));
line("the".repeat(200));
line(" the".repeat(200));
line("\n".repeat(200));
line("é".repeat(300));
line("😀".repeat(100));
line("我".repeat(200));
line("Supercalifragilisticexpialidocious".repeat(20));
line("\t".repeat(100), "\r\n".repeat(50), "y");
line("-=".repeat(300));

process.stdout.write(out.join("\n") + "\n \t \n   ");
