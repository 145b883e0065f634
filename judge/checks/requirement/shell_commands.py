"""Shell lines as commands: which run a program (and which), which only set up, move files or report, and
which run another tool (work). Read for `hollow_units`, which follows a program to its code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Literal

_PYTHON = re.compile(r"^python[\d.]*$|^ipython\d?$|^pypy\d?$")
_LAUNCHERS = frozenset({"torchrun", "deepspeed", "accelerate", "mpirun", "srun", "horovodrun", "nohup", "time",
                        "exec", "xvfb-run", "stdbuf", "timeout", "nice", "uv", "poetry", "pipenv", "env"})
_SHELLS = frozenset({"bash", "sh", "zsh", "source", "."})
# Commands that set up the environment, move files or report: they implement no step of a method.
_SHELL_PLUMBING = frozenset({
    "export", "unset", "set", "cd", "pushd", "popd", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "cat", "echo",
    "printf", "ls", "touch", "chmod", "chown", "tee", "wait", "sleep", "exit", "return", "true", "false", "if",
    "then", "else", "elif", "fi", "for", "do", "done", "while", "until", "case", "esac", "[", "[[", "test",
    "date", "which", "pwd", "trap", "shift", "local", "declare", "readonly", "micromamba", "conda", "mamba",
    "pip", "pip3", "module", "nvidia-smi", "head", "tail", "wc", "sort", "uniq", "basename", "dirname",
    "realpath", "readlink", "env", "hostname", "whoami", "git", "tar", "unzip", "zip", "gzip", "find", "xargs",
    "{", "}", "(", ")", ";;", "function", "source", ".", "eval", "alias", "ulimit", "umask", "clear",
})
_PROGRAM_SUFFIXES = (".py", ".sh", ".bash")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
MODULE = "module:"  # a program named as `python -m package.module`
SEPARATORS = re.compile(r"&&|\|\||;|\|")


def commands(lines: Sequence[str]) -> list[list[str]]:
    """The commands of shell lines (continuations joined, split at `&&`, `||`, `;`, `|`), as words."""
    joined: list[str] = []
    pending = ""
    for line in lines:
        stripped = line.strip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        joined.append(pending + stripped)
        pending = ""
    if pending:
        joined.append(pending)
    out = []
    for line in joined:
        for part in SEPARATORS.split(line.split(" #", 1)[0]):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            if words:
                out.append(words)
    return out


def shell_command(words: list[str]) -> tuple[Literal["real", "program", "plumbing"], str]:
    """("program", path) for a command that runs a script, ("plumbing", "") for set-up, moves and reports,
    ("real", "") for any other tool."""
    words = [w for w in words if not w.startswith(">") and not w.startswith("2>") and w != "&"]
    while words and (_ASSIGNMENT.match(words[0]) or _base(words[0]) in _LAUNCHERS or words[0] == "launch"):
        words = words[1:]
    if not words:
        return "plumbing", ""
    head = _base(words[0])
    if _PYTHON.match(head):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] not in {"-m", "-c"}:
            rest = rest[2:] if rest[0] in {"-W", "-X"} else rest[1:]
        if not rest or rest[0] == "-c":
            return "real", ""
        if rest[0] == "-m":
            return ("program", MODULE + rest[1].replace(".", "/") + ".py") if len(rest) > 1 else ("real", "")
        return ("program", rest[0]) if rest[0].endswith(".py") else ("real", "")
    if head in _SHELLS:
        target = next((w for w in words[1:] if not w.startswith("-")), "")
        if head in {"source", "."} and not target.endswith(_PROGRAM_SUFFIXES):
            return "plumbing", ""
        return ("program", target) if target else ("plumbing", "")
    if words[0].endswith(_PROGRAM_SUFFIXES):
        return "program", words[0]
    if head in _SHELL_PLUMBING or head.startswith("$") or "=" in words[0]:
        return "plumbing", ""
    return "real", ""


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def resolve_program(program: str, paths: list[str]) -> str | None:
    """The file of `paths` a command's program path names: the longest matching tail of its components
    (a component holding a variable ends what can be matched), None when none matches."""
    parts = [p for p in program.split("/") if p and p != "."]
    cut = max((i for i, p in enumerate(parts) if "$" in p or "{" in p), default=-1)
    parts = parts[cut + 1:]
    if not parts:
        return None
    best: tuple[int, str] | None = None
    for path in paths:
        have = path.strip("/").split("/")
        n = 0
        while n < min(len(have), len(parts)) and have[-1 - n] == parts[-1 - n]:
            n += 1
        if n and (best is None or n > best[0]):
            best = (n, path)
    return best[1] if best is not None else None
