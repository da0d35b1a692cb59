#!/usr/bin/env python3
"""Writes the test tokenizers of tests/test_tokenizer.c: a small byte-level
BPE trained here on the corpus below, in Hugging Face's tokenizer.json
format with the features of GPT-NeoX's (the tokenizer of the state-spaces
Mamba checkpoints): NFC normalizer, ByteLevel pre-tokenizer, post-processor
and decoder, special <|endoftext|> and <|padding|> at ids 0 and 1, added
runs of spaces with normalized true.  Two more added tokens cover what NeoX
does not use: <|mask|> with lstrip and rstrip, and a normalized token
written decomposed (matched in NFC).

    python3 tests/data/tokenizer/make_tokenizer.py

writes, beside this script, tokenizer.json (merges as "a b" strings, as
NeoX has them) and tokenizer-merge-pairs.json (the same, merges as
["a", "b"] arrays, as newer files have them).  Then make_expected.mjs
(see there) makes expected.json with Hugging Face's JS tokenizer.  Python
3 stdlib only; the output is deterministic.
"""
import collections
import json
import os
import re
import unicodedata

MERGES = 400
SPACE_RUNS = range(2, 7)

CORPUS = """
The quick brown fox jumps over the lazy dog. It's what they're doing: I've
seen it, I'm sure, we'll see and you'd know. Don't worry, the state space
model reads the tokens one by one, and the tokenizer turns the text into
tokens. In 2024 there were 1234567 tokens, 3.14 and 1,000 and 42 answers.
Hello world! Hello there, hello again. Wait... what?!? (yes) -- [no] {maybe}
def forward(self, x):
    return self.layer(x) + x  # residual
    for i in range(10):
        print(i, i * 2)
Привет, мир! Как дела? Мир большой, и текст на русском языке тоже нужен.
你好，世界。今天天气很好。我们在测试分词器。
مرحبا بالعالم. هذا نص عربي للاختبار.
Καλημέρα κόσμε, τι κάνεις; café résumé naïve Ångström
日本語のテキストも少し。 한국어 텍스트도 있습니다.
"""

# The GPT-2 regex with what Python's re has: [^\W\d_] for \p{L}, \d for
# \p{N}.  Close enough to pick merges; the tokenizer itself is exact.
PRE_TOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's byte alphabet: byte -> the character that spells it."""
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return chars


def train(text, merges_wanted):
    alphabet = bytes_to_unicode()
    words = collections.Counter(PRE_TOKENIZE.findall(unicodedata.normalize("NFC", text)))
    seqs = {w: [alphabet[b] for b in w.encode("utf-8")] for w in words}
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, count in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        for w in words:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return alphabet, merges


def added(id_, content, special, normalized, strip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": strip, "rstrip": strip,
            "normalized": normalized, "special": special}


def main():
    alphabet, merges = train(CORPUS, MERGES)
    vocab = {"<|endoftext|>": 0, "<|padding|>": 1}
    for b in range(256):
        vocab[alphabet[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added_tokens = [added(0, "<|endoftext|>", True, False), added(1, "<|padding|>", True, False)]
    for n in SPACE_RUNS:
        added_tokens.append(added(len(vocab) + len(added_tokens) - 2, " " * n, False, True))
    next_id = len(vocab) + len(added_tokens) - 2
    added_tokens.append(added(next_id, "<|mask|>", True, False, strip=True))
    added_tokens.append(added(next_id + 1, "A\u030angstro\u0308m", False, True))
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab}
    here = os.path.dirname(os.path.abspath(__file__))
    for name, merge_list in (("tokenizer.json", [f"{a} {b}" for a, b in merges]),
                             ("tokenizer-merge-pairs.json", [[a, b] for a, b in merges])):
        doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
               "normalizer": {"type": "NFC"}, "pre_tokenizer": byte_level, "post_processor": byte_level,
               "decoder": byte_level, "model": dict(model, merges=merge_list)}
        with open(os.path.join(here, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=2)
            f.write("\n")
    print(f"{len(vocab)} vocab tokens, {len(merges)} merges, {len(added_tokens)} added tokens")


if __name__ == "__main__":
    main()
