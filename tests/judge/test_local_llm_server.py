"""The local model server on any CPU: a portable build, and a death that is told at once.

A llama-cpp-python built with native CPU detection on one machine dies with SIGILL on another (seen on
an Intel Xeon that lists AMX but whose VM does not grant its tile state); the server's death used to go
unnoticed while every request failed with "Connection error".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from judge.local_llm import PORTABLE_REBUILD_HINT, LocalModelServer, LocalServerDiedError, describe_exit
from tests.local_llm_support import require_llama_cpp

pytestmark = pytest.mark.llm


def _ggml_libraries() -> list[Path]:
    import importlib.util

    require_llama_cpp()
    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None and spec.submodule_search_locations
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    found = sorted(p for p in lib.glob("libggml*.so") if p.is_file())
    assert found, f"no ggml library under {lib}"
    return found


def test_the_built_library_uses_no_instruction_set_beyond_avx2() -> None:
    """No AVX-512 (zmm registers) or AMX (tile) instruction in ggml: what native detection would add on a
    machine that has them, and what a machine without them (or a VM that does not grant them) dies on."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    for library in _ggml_libraries():
        text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(library)], check=True,
                              capture_output=True, text=True).stdout
        offending = [line for line in text.splitlines() if "%zmm" in line or "%tmm" in line or "tileload" in line]
        assert not offending, (f"{library.name} holds {len(offending)} AVX-512/AMX instructions, e.g. "
                               f"{offending[0].strip()!r}: it was built for this CPU only; rebuild with "
                               f"{PORTABLE_REBUILD_HINT}")
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in info and "AVX512 = 1" not in info and "AMX" not in info, info


def test_exit_descriptions_name_the_signal_and_the_cause_of_sigill() -> None:
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert "SIGILL" in describe_exit(-signal.SIGILL) and "rebuild it portably" in describe_exit(-signal.SIGILL)


def test_a_server_killed_mid_request_is_named_dead_within_seconds() -> None:
    deaths: list[str] = []
    require_llama_cpp()
    server = LocalModelServer()
    server.start(on_death=deaths.append)
    try:
        server.ensure_alive()
        pid = server.pid
        assert pid is not None
        body = {"model": "local", "messages": [{"role": "user", "content": "Count to one hundred."}],
                "max_tokens": 200}
        request = threading.Thread(target=lambda: _post_ignoring_errors(f"{server.api_base}/chat/completions",
                                                                        body), daemon=True)
        request.start()
        time.sleep(0.3)
        os.kill(pid, signal.SIGILL)  # what a build for another CPU dies of
        started = time.monotonic()
        while server.alive and time.monotonic() - started < 5:
            time.sleep(0.02)
        assert not server.alive, "the server was still reported alive 5 s after it was killed"
        with pytest.raises(LocalServerDiedError) as raised:
            server.ensure_alive()
        message = str(raised.value)
        assert "SIGILL" in message and server.api_base in message and str(pid) in message
        deadline = time.monotonic() + 2
        while not deaths and time.monotonic() < deadline:
            time.sleep(0.02)
        assert deaths and "SIGILL" in deaths[0], "the watcher did not report the death"
    finally:
        server.stop()


def _post_ignoring_errors(url: str, body: dict[str, object]) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(url, json=body, timeout=30)


def test_the_serve_command_exits_naming_its_dead_server() -> None:
    require_llama_cpp()
    command = [str(Path(sys.executable).parent / "expjudge"), "local-llm", "serve"]
    cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert cli.stdout is not None
        deadline = time.monotonic() + 90
        line = ""
        while "api base" not in line and time.monotonic() < deadline:
            line = cli.stdout.readline()
            if not line and cli.poll() is not None:
                break
        assert "api base" in line, f"serve did not start: {cli.stderr.read() if cli.stderr else ''}"
        children = subprocess.run(["pgrep", "-P", str(cli.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 1, children
        os.kill(int(children[0]), signal.SIGKILL)
        code = cli.wait(timeout=10)
        stderr = cli.stderr.read() if cli.stderr else ""
        assert code == 1 and "SIGKILL" in stderr and "local model server" in stderr, (code, stderr)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
