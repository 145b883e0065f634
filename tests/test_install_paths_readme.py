"""`.ci/install_paths.py` finds every install path's commands in the README, and they are the ones errors name."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from judge.local_models import install_commands

REPO = Path(__file__).resolve().parents[1]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("install_paths", REPO / ".ci" / "install_paths.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["install_paths"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_the_script_reads_each_path_s_commands_from_the_readme() -> None:
    readme = load_script().readme_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert readme.setup.startswith("python3 -m venv .venv && ") and "expjudge grade" in readme.setup
    assert flat(readme.local_llm_install) == install_commands.LOCAL_LLM
    assert flat(readme.coder_install) == install_commands.CODER_MODEL
    assert "--judge openai/local --api-base http://127.0.0.1:8080/v1" in flat(readme.local_llm_grade)
    assert readme.local_llm_serve == "expjudge local-llm serve --port 8080"
    assert readme.coder_serve == "expjudge local-llm serve --model coder --port 8080"
    assert "--judge embedded+coder --rubric expbench-v2-coder" in flat(readme.coder_grade)


def test_the_readme_s_coder_judge_string_is_the_served_model_s() -> None:
    from judge.local_llm import model_alias

    readme = load_script().readme_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert readme.coder_judge == f"openai/{model_alias('coder')}"


def test_a_readme_without_a_path_s_commands_fails_the_script_naming_the_section() -> None:
    script = load_script()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    without_local_llm = readme.replace("--judge openai/local --api-base", "--judge openai/other --api-base")
    try:
        script.readme_commands(without_local_llm)
    except script.StepFailed as exc:
        assert script.LOCAL_LLM_SECTION in str(exc) and "openai/local" in str(exc)
    else:
        raise AssertionError("a README without the local LLM's grade command was accepted")
