"""The coder model: assembled from its packages atomically, verified by SHA-256, served under a hashed alias,
and (when installed) grading a few leaves end to end through litellm and llama-cpp-python's server.

The end-to-end tests are marked `llm` and `coder`; without the coder-model extra they skip, naming the
install command. Installed, they really run (a 1.5B model on 2 cores: about a minute each).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_test_support import HUNK_README, args_hunk, make_context, requirement, snip
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.errors import JudgeConfigError
from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.local_llm import LocalModelServer, llama_cpp_available, model_alias
from judge.local_models import coder
from judge.settings import Settings
from tests.local_llm_support import require_llama_cpp

_register_commands()
PARTS = [b"GGUF" + b"a" * 96, b"b" * 100, b"c" * 37]
WHOLE = b"".join(PARTS)


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Three small part files standing in for the 22 packages, with their join's size and hash recorded."""
    paths = []
    for index, data in enumerate(PARTS, start=1):
        path = tmp_path / "site" / f"part{index:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    monkeypatch.setattr(coder, "part_paths", lambda: paths)
    monkeypatch.setattr(coder, "FILE_SIZE", len(WHOLE))
    monkeypatch.setattr(coder, "SHA256", hashlib.sha256(WHOLE).hexdigest())
    return paths


def test_the_parts_are_joined_in_order_into_the_verified_file(tmp_path: Path, fake_parts: list[Path]) -> None:
    seen: list[tuple[int, int]] = []
    path = coder.ensure_model(tmp_path / "models", progress=lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == WHOLE and path.name == coder.FILE_NAME
    assert seen[-1] == (len(WHOLE), len(WHOLE))
    assert [p.name for p in path.parent.iterdir()] == [coder.FILE_NAME]  # no temporary file left behind


def test_a_damaged_file_is_rebuilt_from_the_parts(tmp_path: Path, fake_parts: list[Path]) -> None:
    path = coder.ensure_model(tmp_path)
    path.write_bytes(WHOLE[:-1] + b"X")  # same size, other bytes: only the hash tells
    assert coder.ensure_model(tmp_path).read_bytes() == WHOLE


def test_parts_that_do_not_join_into_the_recorded_file_are_an_error_and_leave_nothing(
        tmp_path: Path, fake_parts: list[Path]) -> None:
    fake_parts[1].write_bytes(b"B" * 100)
    with pytest.raises(coder.ModelIntegrityError, match="not the recorded") as info:
        coder.ensure_model(tmp_path / "models")
    assert coder.SHA256 in info.value.message and "force-reinstall" in info.value.message
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_parts_name_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coder, "_module", lambda index: f"expjudge_no_such_part_{index}")
    with pytest.raises(JudgeConfigError, match="coder model is not installed") as info:
        coder.part_paths()
    assert "coder-model" in info.value.message and "22 parts" in info.value.message
    assert not coder.installed()


def test_the_model_dir_follows_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.settings import get_settings

    monkeypatch.setenv("EXPJUDGE_LOCAL_MODEL_DIR", str(tmp_path / "elsewhere"))
    get_settings.cache_clear()
    try:
        assert coder.model_dir() == tmp_path / "elsewhere"
    finally:
        get_settings.cache_clear()


def test_the_coder_alias_names_the_file_hash_and_smollm2_keeps_its_alias() -> None:
    server = LocalModelServer(local_model="coder")
    assert server.model == f"openai/{coder.ALIAS}" and coder.SHA256[:16] in server.model
    assert "--model_alias" in (cmd := server.command(Path("m.gguf"), 1234)) and coder.ALIAS in cmd
    assert LocalModelServer().model == "openai/local" == f"openai/{model_alias('smollm2')}"
    with pytest.raises(JudgeConfigError, match="unknown local model"):
        LocalModelServer(local_model="gpt-5")


def test_the_licence_ships_beside_the_loader() -> None:
    text = coder.LICENSE_FILE.read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0" in text and coder.SHA256 in text


def test_serve_rejects_an_unknown_model() -> None:
    result = CliRunner().invoke(app, ["local-llm", "serve", "--model", "gpt-5"])
    assert result.exit_code == 2 and "unknown model" in result.output


def test_serve_without_the_coder_model_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed (the error checked here comes after that one)")
    monkeypatch.setattr(coder, "_module", lambda index: f"expjudge_no_such_part_{index}")
    monkeypatch.setattr(coder, "model_dir", lambda: Path("/nonexistent/expjudge-models"))
    result = CliRunner().invoke(app, ["local-llm", "serve", "--model", "coder"])
    assert result.exit_code == 2 and "coder-model" in result.output and "not installed" in result.output


# ---- end to end on the real coder model (skipped, naming the install command, when it is absent) ----


def require_coder() -> None:
    """Skip unless llama-cpp-python and every coder part package are installed."""
    require_llama_cpp()
    if not coder.installed():
        pytest.skip(f"the coder model is not installed; install it with: {coder.INSTALL_HINT}")


@pytest.fixture(scope="module")
def coder_server() -> Iterator[LocalModelServer]:
    require_coder()
    # One thread: on a loaded machine two llama.cpp threads wait on each other and run ~10x slower.
    server = LocalModelServer(local_model="coder", n_ctx=8192, n_threads=1, startup_timeout=300).start()
    try:
        yield server
    finally:
        server.stop()


LR_FLAG = "Add a --lr command-line option (float, default 3e-4) to the training script's argument parser."


@pytest.mark.llm
@pytest.mark.coder
async def test_the_coder_model_tells_a_requirement_s_code_from_unrelated_text(coder_server: LocalModelServer) -> None:
    readme = snip(HUNK_README, location="README.md @@ -1,2 +1,3 @@")
    plot = "@@ -0,0 +1,3 @@\n+def plot_losses(losses):\n+    plt.plot(losses)\n+    plt.savefig('loss.png')\n"
    unrelated = snip(plot, location="plot.py @@ -0,0 +1,3 @@")
    evidence = [requirement(0, LR_FLAG, args_hunk()), requirement(1, LR_FLAG, unrelated),
                requirement(2, "Save a plot of the training loss to loss.png.", readme)]
    # A 1.5B model on a loaded 2-core machine may take minutes for one call; a retry after a timeout would
    # only queue behind the request the server is still answering.
    settings = Settings(llm_timeout_seconds=1800, llm_max_transport_retries=0)
    judge = LLMJudge(coder_server.model, api_base=coder_server.api_base, api_key="local", fallback=EmbeddedJudge(),
                     max_concurrency=1, token_budget=2000, settings=settings)
    outcome = await judge.judge_leaves(make_context(), evidence)
    by_id = {r.leaf_id: r for r in outcome.results}
    assert all(r.judge == "llm" and r.reason_code != "judge_error" for r in outcome.results), outcome.results
    # The model's own vote on the leaf whose hunk does exactly what it asks. A positive vote whose quote is
    # not verbatim in the diff is then `unscored` by the quote check, which is the judge's rule, not the
    # model's reading. (Its votes on the two unrelated leaves are not asserted: in one 3-leaf call it has
    # voted "pass" on the plot hunk for the --lr requirement; bench/judging/coder_judge.py measures such errors.)
    assert by_id["requirement.0"].votes == {"pass": 1}, by_id["requirement.0"]
    for result in outcome.results:
        assert sum(result.votes.values()) == 1, result  # one sample, one valid answer per leaf
        assert result.verdict == next(iter(result.votes)) or result.reason_code == "unsupported_evidence", result
    assert outcome.usage.llm_calls >= 1 and outcome.usage.prompt_tokens > 0
    assert judge.fingerprint_fields()["model"] == f"openai/{coder.ALIAS}"


@pytest.mark.llm
@pytest.mark.coder
async def test_the_coder_model_citing_blocks_gives_verdicts_the_quote_check_refused(
        coder_server: LocalModelServer) -> None:
    # Stop 30: quoting, every positive vote of the coder model was `unscored` (its quotes were not verbatim).
    # Citing blocks, the leaf whose hunk does what it asks is decided, with that hunk as its evidence.
    settings = Settings(llm_timeout_seconds=1800, llm_max_transport_retries=0)
    judge = LLMJudge(coder_server.model, api_base=coder_server.api_base, api_key="local", fallback=EmbeddedJudge(),
                     max_concurrency=1, token_budget=2000, settings=settings, citations="blocks")
    outcome = await judge.judge_leaves(make_context(), [requirement(0, LR_FLAG, args_hunk())])
    result = outcome.results[0]
    assert result.judge == "llm" and result.votes == {"pass": 1}, result
    assert result.verdict == "pass", result
    assert [e.location for e in result.evidence] == ["train.py @@ -10,6 +10,8 @@"]
    assert judge.spec()["args"]["citations"] == "blocks"
