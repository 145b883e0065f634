"""Follow the README's install commands on fresh clones, one per install path, and grade the bundled example.

Paths (each a `git clone` of this repository at HEAD into a temporary folder, with its own `.venv`):
- base: the README's first set-up command, verbatim (venv, plain install, grade on the embedded judge);
- local-llm: `python3 -m venv .venv`, the install command of "The local LLM", then its `serve` in the
  background and its `grade --judge openai/local --api-base ...` against it;
- coder-model: `python3 -m venv .venv`, the install command of "The coder model", its `embedded+coder` grade,
  then its `serve --model coder`, checked to print the `--judge` string the README gives.

Any non-zero exit fails the run (exit 1, naming the step and the tail of its output); the times of every
step are printed at the end. Commands are read from README.md of the clone, so a README change is what runs.
Two deviations, both printed: the README's port 8080 becomes a free port (a developer's machine may use
8080), and llama-cpp-python is compiled once per run (`pip wheel --no-cache-dir` with the README's
CMAKE_ARGS, into this run's temporary folder) and found by the install commands through PIP_FIND_LINKS, so the
two paths that need it share one ~7-minute compile; no wheel from pip's cache (built with other CPU flags)
is ever used for it, while wheels that do not compile come from pip's cache as usual. Each path keeps its
store, embedding cache and coder model folder in its own clone, so nothing is served from an earlier grade.

Usage: python3 .ci/install_paths.py [--paths base,local-llm,coder-model] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PATHS = ("base", "local-llm", "coder-model")
SETUP_SECTION = "Set-up (fresh machine, Python 3.11)"
LOCAL_LLM_SECTION = "The local LLM (no API key)"
CODER_SECTION = "The coder model (Qwen2.5-Coder-1.5B-Instruct)"
README_PORT = "8080"
SERVE_TIMEOUT = 600.0  # the coder model's first start joins 1.1 GB and loads it on busy cores


class StepFailed(Exception):
    """A command exited non-zero (or a server did not come up)."""


@dataclass
class Timings:
    rows: list[tuple[str, str, float]] = field(default_factory=list)

    def add(self, path: str, step: str, seconds: float) -> None:
        self.rows.append((path, step, seconds))
        print(f"[install-paths] {path}: {step}: {seconds:.1f} s", flush=True)

    def table(self) -> str:
        width = max(len(f"{p} / {s}") for p, s, _ in self.rows)
        lines = [f"{'path / step'.ljust(width)}  seconds"]
        lines += [f"{f'{p} / {s}'.ljust(width)}  {t:7.1f}" for p, s, t in self.rows]
        total = sum(t for _, _, t in self.rows)
        lines.append(f"{'total'.ljust(width)}  {total:7.1f}")
        return "\n".join(lines)


def readme_blocks(text: str) -> dict[str, list[list[str]]]:
    """The README's ```bash blocks by the heading they sit under, each as its commands (continuations joined)."""
    blocks: dict[str, list[list[str]]] = {}
    heading, inside, lines = "", False, list[str]()
    for line in text.splitlines():
        if not inside and line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif not inside and line.strip() == "```bash":
            inside, lines = True, []
        elif inside and line.strip() == "```":
            inside = False
            joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
            blocks.setdefault(heading, []).append([c for c in joined.splitlines() if c.strip()])
        elif inside:
            lines.append(line)
    return blocks


def only(commands: list[str], pattern: str, where: str) -> str:
    """The one command of `commands` matching `pattern` (a regex)."""
    found = [c for c in commands if re.search(pattern, c)]
    if len(found) != 1:
        raise StepFailed(f"README section {where!r}: expected one command matching {pattern!r}, found {found}")
    return found[0]


def background_command(command: str) -> str:
    """A README line run in the background (`cmd &   # comment`) as a plain command."""
    return re.sub(r"\s*&\s*(#.*)?$", "", command).strip()


def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


class Runner:
    """Runs one path's shell commands in its clone, timing each."""

    def __init__(self, path: str, clone: Path, env: dict[str, str], timings: Timings) -> None:
        self.path, self.clone, self.env, self.timings = path, clone, env, timings

    def run(self, step: str, command: str) -> str:
        print(f"[install-paths] {self.path}: {step}: $ {command}", flush=True)
        started = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=self.clone, env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        self.timings.add(self.path, step, time.monotonic() - started)
        if done.returncode != 0:
            raise StepFailed(f"{self.path}: {step} exited {done.returncode}:\n$ {command}\n{tail(done.stdout)}")
        if "expjudge grade" in command:  # its usage line: calls, tokens, time, cache hits
            print(tail(done.stdout, 2), flush=True)
        return done.stdout

    def serve(self, step: str, command: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
        """Start `command` (an `expjudge local-llm serve`) and wait for the lines it prints when ready."""
        print(f"[install-paths] {self.path}: {step}: $ {command} &", flush=True)
        started = time.monotonic()
        process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.clone, env=self.env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None
        printed: dict[str, str] = {}
        seen: list[str] = []
        timer = threading.Timer(SERVE_TIMEOUT, stop, args=(process,))  # a silent hang ends the read below
        timer.start()
        try:
            while "api base" not in printed:
                line = process.stdout.readline()
                if not line:
                    process.wait()
                    raise StepFailed(f"{self.path}: {step} exited {process.returncode} before it was ready "
                                     f"(or within {SERVE_TIMEOUT:g} s):\n$ {command}\n{tail(''.join(seen))}")
                seen.append(line)
                key, _, value = line.partition(":")
                printed[key.strip()] = value.strip()
        finally:
            timer.cancel()
        self.timings.add(self.path, step, time.monotonic() - started)
        return process, printed


def stop(process: subprocess.Popen[str]) -> int:
    """SIGTERM the server this script started (by its pid) and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def clone(source: Path, head: str, target: Path) -> None:
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(source), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", "--detach", head], check=True)


def path_env(clone_dir: Path, find_links: str | None) -> dict[str, str]:
    """The environment of one path: the README's activated venv, its own store and model folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPJUDGE_") and k != "VIRTUAL_ENV"}
    venv = clone_dir / ".venv"
    env.update({
        "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}",  # "assume the virtual environment is active"
        "VIRTUAL_ENV": str(venv),
        "PYTHONUNBUFFERED": "1",
        "EXPJUDGE_DATABASE_URL": f"sqlite+aiosqlite:///{clone_dir / 'state' / 'expjudge.db'}",
        "EXPJUDGE_LOCAL_MODEL_DIR": str(clone_dir / "state" / "models"),
    })
    env.pop("PYTHONPATH", None)
    if find_links is not None:
        env["PIP_FIND_LINKS"] = find_links
    (clone_dir / "state").mkdir(exist_ok=True)
    return env


def configured_find_links() -> list[str]:
    """pip's configured --find-links (PIP_FIND_LINKS replaces them, so they are carried over)."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], text=True, capture_output=True,
                          check=False)
    links: list[str] = []
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            links += shlex.split(value.strip().strip("'\""))
    return list(dict.fromkeys(links))


def build_llama_wheel(readme_install: str, constraints: Path, wheels: Path, timings: Timings) -> None:
    """Compile llama-cpp-python once, with the README's CMAKE_ARGS and without pip's cache."""
    match = re.search(r'CMAKE_ARGS="([^"]*)"', readme_install)
    if match is None:
        raise StepFailed(f"the README's install command sets no CMAKE_ARGS: {readme_install}")
    pin = next((line.strip() for line in constraints.read_text().splitlines()
                if re.match(r"llama[-_]cpp[-_]python==", line.strip(), re.I)), None)
    if pin is None:
        raise StepFailed(f"{constraints} pins no llama-cpp-python")
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-cache-dir", "--no-deps", "-w", str(wheels), pin]
    print(f"[install-paths] llama-cpp-python: $ CMAKE_ARGS=\"{match.group(1)}\" {shlex.join(command)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, env={**os.environ, "CMAKE_ARGS": match.group(1)}, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    timings.add("llama-cpp-python", "compile the wheel (pip wheel --no-cache-dir)", time.monotonic() - started)
    if done.returncode != 0:
        raise StepFailed(f"compiling llama-cpp-python exited {done.returncode}:\n{tail(done.stdout)}")


@dataclass(frozen=True)
class ReadmeCommands:
    """The README's commands this script runs, by install path."""

    setup: str
    local_llm_install: str
    local_llm_serve: str
    local_llm_grade: str
    coder_install: str
    coder_serve: str
    coder_judge: str
    coder_grade: str


def readme_commands(text: str) -> ReadmeCommands:
    """The commands of each install path in README text.

    Raises:
        StepFailed: A section lacks its command (or holds two), so the README and this script disagree.
    """
    blocks = readme_blocks(text)
    try:
        setup, local, coder = blocks[SETUP_SECTION][0], blocks[LOCAL_LLM_SECTION][0], blocks[CODER_SECTION]
    except (KeyError, IndexError) as exc:
        raise StepFailed(f"the README has no bash block under the heading {exc}") from None
    coder_serve_grade = only(coder[0], r"^expjudge grade", CODER_SECTION)
    judge = re.search(r"--judge (\S+)", coder_serve_grade)
    if judge is None:
        raise StepFailed(f"README section {CODER_SECTION!r}: no --judge in {coder_serve_grade}")
    return ReadmeCommands(
        setup=only(setup, r"^python3 -m venv \.venv && .*expjudge grade", SETUP_SECTION),
        local_llm_install=only(local, r"pip install .*\[local-llm\]", LOCAL_LLM_SECTION),
        local_llm_serve=background_command(only(local, r"^expjudge local-llm serve", LOCAL_LLM_SECTION)),
        local_llm_grade=only(local, r"^expjudge grade .*--judge openai/local", LOCAL_LLM_SECTION),
        coder_install=only(coder[0], r"pip install .*\[coder-model\]", CODER_SECTION),
        coder_serve=background_command(only(coder[0], r"^expjudge local-llm serve --model coder", CODER_SECTION)),
        coder_judge=judge.group(1),
        coder_grade=only(coder[-1], r"^expjudge grade .*--judge embedded\+coder", CODER_SECTION),
    )


def run_base(runner: Runner, readme: ReadmeCommands) -> None:
    runner.run("README set-up command (venv, install, grade on embedded)", readme.setup)


def run_local_llm(runner: Runner, readme: ReadmeCommands) -> None:
    port = free_port()
    runner.run("python3 -m venv .venv", "python3 -m venv .venv")
    runner.run("install (README, local LLM)", readme.local_llm_install)
    server, _ = runner.serve("expjudge local-llm serve (SmolLM2, until ready)",
                             readme.local_llm_serve.replace(README_PORT, port))
    try:
        runner.run("grade --judge openai/local", readme.local_llm_grade.replace(README_PORT, port))
    finally:
        code = stop(server)
    if code not in (0, -signal.SIGTERM):
        raise StepFailed(f"local-llm: serve ended with {code} when stopped")


def run_coder(runner: Runner, readme: ReadmeCommands) -> None:
    port = free_port()
    runner.run("python3 -m venv .venv", "python3 -m venv .venv")
    runner.run("install (README, coder model)", readme.coder_install)
    runner.run("grade --judge embedded+coder (first use: joins the model)", readme.coder_grade)
    server, printed = runner.serve("expjudge local-llm serve --model coder (until ready)",
                                   readme.coder_serve.replace(README_PORT, port))
    code = stop(server)
    if printed.get("model") != readme.coder_judge:
        raise StepFailed(f"coder-model: serve printed model {printed.get('model')!r}; the README's --judge is "
                         f"{readme.coder_judge!r}")
    if code not in (0, -signal.SIGTERM):
        raise StepFailed(f"coder-model: serve ended with {code} when stopped")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated: " + ", ".join(PATHS))
    parser.add_argument("--keep", action="store_true", help="keep the clones (printed) instead of removing them")
    args = parser.parse_args()
    chosen = [p.strip() for p in args.paths.split(",") if p.strip()]
    if unknown := [p for p in chosen if p not in PATHS]:
        parser.error(f"unknown path(s) {unknown}; choose from {', '.join(PATHS)}")

    source = Path(subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--show-toplevel"],
                                 text=True, capture_output=True, check=True).stdout.strip())
    head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], text=True, capture_output=True,
                          check=True).stdout.strip()
    if subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"], text=True,
                      capture_output=True, check=True).stdout.strip():
        print(f"[install-paths] warning: {source} has uncommitted changes; the clones hold HEAD {head[:12]} only")
    work = Path(tempfile.mkdtemp(prefix="expjudge-install-paths-"))
    print(f"[install-paths] clones of {source} at {head[:12]} in {work}", flush=True)
    timings = Timings()
    started = time.monotonic()
    removals: list[threading.Thread] = []
    return_code = 0
    try:
        readme_clone = work / "readme"
        clone(source, head, readme_clone)
        readme = readme_commands((readme_clone / "README.md").read_text(encoding="utf-8"))
        find_links = None
        if {"local-llm", "coder-model"} & set(chosen):
            wheels = work / "wheels"
            build_llama_wheel(readme.local_llm_install, readme_clone / "constraints.txt", wheels, timings)
            find_links = " ".join([*configured_find_links(), str(wheels)])
            print(f"[install-paths] PIP_FIND_LINKS={find_links} for the installs of local-llm and coder-model")
        for name, run in (("base", run_base), ("local-llm", run_local_llm), ("coder-model", run_coder)):
            if name not in chosen:
                continue
            clone_dir = work / name
            t0 = time.monotonic()
            clone(source, head, clone_dir)
            timings.add(name, "git clone", time.monotonic() - t0)
            run(Runner(name, clone_dir, path_env(clone_dir, None if name == "base" else find_links), timings), readme)
            if not args.keep:  # a venv of GBs takes minutes to delete (discards): meanwhile the next path runs
                removals.append(threading.Thread(target=shutil.rmtree, args=(clone_dir, True)))
                removals[-1].start()
    except StepFailed as exc:
        print(f"[install-paths] FAILED: {exc}", file=sys.stderr, flush=True)
        return_code = 1
    finally:
        t0 = time.monotonic()
        for removal in removals:
            removal.join()
        if args.keep:
            print(f"[install-paths] kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        timings.add("all", "remove the clones (what was left to wait for)", time.monotonic() - t0)
    if return_code == 0:
        print(f"[install-paths] all paths passed in {time.monotonic() - started:.0f} s", flush=True)
    print(timings.table(), flush=True)
    return return_code


if __name__ == "__main__":
    sys.exit(main())
