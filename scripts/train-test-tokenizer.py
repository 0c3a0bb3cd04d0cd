#!/usr/bin/env python3
"""Trains the small byte-level BPE tokenizer.json that yardstick-load's tests use
(crates/yardstick-load/corpus/bpe-tokenizer.json) on the bundled corpus, with the Hugging Face
`tokenizers` library (pip install tokenizers). GPT-2 style: byte-level pre-tokenizer and
decoder, no normaliser. Deterministic for a given `tokenizers` version.

    python3 scripts/train-test-tokenizer.py
"""
import pathlib

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

root = pathlib.Path(__file__).resolve().parent.parent / "crates/yardstick-load/corpus"
lines = [
    l for l in (root / "essays.txt").read_text().splitlines() if l and not l.startswith("#")
]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=256 + 1000,
    min_frequency=2,
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
tok.train_from_iterator(lines, trainer)
out = root / "bpe-tokenizer.json"
tok.save(str(out))
print(f"wrote {out} ({out.stat().st_size} bytes, vocab {tok.get_vocab_size()})")
