// Writes expected.json beside this script: the ids that Hugging Face's JS
// tokenizer (npm @huggingface/tokenizers, an implementation independent of
// ours) gives for the strings below with tokenizer.json (made by
// make_tokenizer.py), their text once decoded, and decodes of id lists that
// split characters.  tests/test_tokenizer.c checks ssmjit against it.
//
//     mkdir -p /tmp/tokjs && (cd /tmp/tokjs && npm init -y && npm install @huggingface/tokenizers)
//     node tests/data/tokenizer/make_expected.mjs /tmp/tokjs
//
// (the argument: the folder holding node_modules; the package stays out of
// the repository; expected.json was made with its version 0.2.0).  The strings avoid what the two implementations do not
// agree on: U+0085 and U+FEFF, which JavaScript's \s and Oniguruma's
// (Hugging Face's Rust crate, and ssmjit) see the other way round, and
// characters newer than the Unicode version of src/io/unicode_tables.c.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
if (process.argv.length !== 3) {
  console.error("usage: node make_expected.mjs DIR_WITH_NODE_MODULES");
  process.exit(2);
}
const require = createRequire(path.resolve(process.argv[2]) + "/");
const { Tokenizer } = require("@huggingface/tokenizers");

const json = JSON.parse(readFileSync(path.join(here, "tokenizer.json"), "utf8"));
// decode as the Rust crate does: no clean-up of spaces before punctuation
const tokenizer = new Tokenizer(json, { clean_up_tokenization_spaces: false });

const strings = [
  "",
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "It's what they're doing: I've, I'm, we'll, you'd, don't.",
  "IT'S 'S ''s x's 're've 'll'd 'x",
  "In 2024 there were 1234567 tokens, 3.14 and 1,000.",
  "Wait... what?!? (yes) -- [no] {maybe} <tag/> @#$%^&*",
  "a  b   c    d     e      f       g",
  "  leading spaces",
  "trailing spaces   ",
  " ",
  "   ",
  "\n",
  "line1\nline2\n\nline3\r\n",
  "\ttab\tseparated\t\tvalues\t",
  "mixed \t \n whitespace \u00a0 and\u3000ideographic\u2028separators",
  "Привет, мир! Как дела?",
  "你好，世界。今天天气很好。",
  "مرحبا بالعالم",
  "日本語のテキスト and 한국어",
  "Καλημέρα κόσμε",
  "e\u0301 cafe\u0301 re\u0301sume\u0301",
  "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
  "\u212b \u2126 o\u0308\u0304 a\u0323\u0302 a\u0302\u0323 \u0344",
  "\u00d2\u0323 \u0139\u0327 \u00f4\u0328 \uac00\u11a8 \u1100\uac00",
  "A\u030angstro\u0308m and \u00c5ngstr\u00f6m",
  "I \u2764\ufe0f emoji \ud83d\ude00\ud83c\udf89\ud83d\udc4d\ud83c\udffd and \ud835\udd18\ud835\udd2b\ud835\udd26 \ud840\udc00",
  "Hello<|endoftext|>world",
  "a<|padding|> b <|endoftext|><|endoftext|>",
  "x <|mask|>  y\t<|mask|>\nz",
  "<|endoftext|>",
  "<|endoftext",
  "aaaaaaaaaaaaaaaaaaaaaaaaa abababababababababab",
  "def forward(self, x):\n    return self.layer(x) + x  # residual\n",
  "Ünïcödé and ASCII mixed: naïve café 123€ ½ ²",
];

// decoded is NFC(text) but where an added token's content is not in NFC
// (it decodes as written)
const encode = strings.map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  return { text, ids, nfc: text.normalize("NFC"), decoded: ids.length ? tokenizer.decode(ids) : "" };
});

// GPT-2's byte alphabet, to name the token of one byte
const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
const byteChar = [];
for (let b = 0, n = 0; b < 256; b++) byteChar.push(String.fromCodePoint(printable(b) ? b : 256 + n++));
const byteIds = (...bytes) => bytes.map((b) => tokenizer.token_to_id(byteChar[b]));
const eot = tokenizer.token_to_id("<|endoftext|>");
const decodeIds = [
  byteIds(0xe2, 0x82),             // the first two bytes of the euro sign
  [...byteIds(0xe2), ...tokenizer.encode("a").ids],
  byteIds(0x80),                   // a lone continuation byte
  byteIds(0xf0, 0x9f, 0x98, 0x80), // a whole 4-byte character, byte by byte
  [...byteIds(0xe2, 0x82), eot, ...byteIds(0xac)],
  byteIds(0xc0, 0xaf, 0xed, 0xa0, 0x80, 0xf4, 0x90), // overlong, surrogate, past U+10FFFF
  [eot, eot],
];
const decode = decodeIds.map((ids) => ({ ids, text: tokenizer.decode(ids) }));

// one case a line
const list = (cases) => "[\n  " + cases.map((c) => JSON.stringify(c)).join(",\n  ") + "\n]";
writeFileSync(path.join(here, "expected.json"), `{"encode": ${list(encode)},\n"decode": ${list(decode)}}\n`);
console.log(`${encode.length} encodings, ${decode.length} decodings`);
