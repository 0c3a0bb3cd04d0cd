"""Perplexity of a GGUF model on bench eval's builtin shard, computed directly through the
llama_cpp Python API with correctly aligned log-softmax rows: the reference for
crates/yardstick/tests/it/eval_real_model.rs and docs/eval.md.

    python scripts/smollm2_perplexity_reference.py MODEL.gguf crates/yardstick-eval/src/shard/measure.txt [--bos]

Each paragraph is one sequence; its first text token is not scored (as through the server's
echo, which nulls it). Without --bos the sequence is the text alone (56.35 for
SmolLM2-135M-Instruct Q4_1); with --bos it starts with the BOS token, as the server does under
`--kv_overrides tokenizer.ggml.add_bos_token=bool:true` (57.7585).
"""
import math
import sys

import numpy as np
from llama_cpp import Llama

model, shard = sys.argv[1], sys.argv[2]
bos = "--bos" in sys.argv[3:]
llm = Llama(model_path=model, logits_all=True, n_ctx=2048, n_threads=2, verbose=False,
            kv_overrides={"tokenizer.ggml.add_bos_token": True} if bos else None)
paras = [p.strip() for p in open(shard).read().split("\n\n") if p.strip()]
tot, n = 0.0, 0
for p in paras:
    toks = llm.tokenize(p.encode(), add_bos=bos, special=False)
    llm.reset()
    llm.eval(toks)
    sc = np.array(llm.scores[: len(toks)], dtype=np.float64)
    m = sc.max(axis=1, keepdims=True)
    lsm = sc - m - np.log(np.exp(sc - m).sum(axis=1, keepdims=True))
    first = 2 if bos else 1  # the BOS, then the first text token, carry no score
    for i in range(first, len(toks)):
        tot += lsm[i - 1, toks[i]]
        n += 1
print(f"paragraphs {len(paras)} tokens {n} nll {-tot/n:.6f} perplexity {math.exp(-tot/n):.4f}")
