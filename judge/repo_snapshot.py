"""A repository handed in as a folder or a tar or zip archive, read as one all-added unified diff.

PaperBench submissions (and JudgeEval's) are repositories, not diffs. Graded as "every file added", a
repository becomes a diff the diff evidence layer reads like any other: one `new file` entry per text file.
`.gitignore` files are honoured at every level (as git does: a deeper file's patterns win, negations
included) and `.git/` is never read; binary files (a NUL byte, or not UTF-8) and files over
`max_file_bytes` are skipped, each with a warning. A tar is read member by member without extracting
anything (so no member can be written outside a folder); a single top folder shared by every member is
the repository root, as `git archive --prefix` and `tar czf repo.tgz repo/` make it.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath

import pathspec

from judge.errors import InputError

DEFAULT_MAX_FILE_BYTES = 1_000_000
_SNIFF = 8192
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
ZIP_SUFFIX = ".zip"


@dataclass
class RepoSnapshot:
    """The diff of a repository and what was left out of it."""

    source: str
    diff: str
    files: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why (binary, too large, empty)
    ignored: int = 0  # files and folders .gitignore left out (not warned about: that is what it is for)

    @property
    def warnings(self) -> list[str]:
        """One line per file skipped for being binary or too large."""
        return [f"{self.source}: {path} skipped ({why})" for path, why in sorted(self.skipped.items())
                if why != "empty"]


def is_tar(path: Path) -> bool:
    """True for a file named like a tar archive."""
    return path.is_file() and path.name.lower().endswith(TAR_SUFFIXES)


class _Ignores:
    """The .gitignore files of a tree, by the folder they lie in ("" for the root)."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.specs: dict[str, pathspec.GitIgnoreSpec] = {}
        for folder, text in (files or {}).items():
            self.add(folder, text)

    def add(self, folder: str, text: str) -> None:
        """The patterns of `folder`/.gitignore."""
        self.specs[folder] = pathspec.GitIgnoreSpec.from_lines(text.splitlines())

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        """Whether git would ignore `path` (posix, relative to the root): the deepest deciding file wins.

        A file inside an ignored folder is ignored too (git never looks inside one).
        """
        parts = PurePosixPath(path).parts
        if ".git" in parts:
            return True
        if any(self._decide(parts[:end], True) for end in range(1, len(parts))):
            return True
        return self._decide(parts, is_dir)

    def _decide(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        verdict = False
        for depth in range(len(parts)):
            spec = self.specs.get("/".join(parts[:depth]))
            if spec is None:
                continue
            decided = spec.check_file("/".join(parts[depth:]) + ("/" if is_dir else "")).include
            if decided is not None:
                verdict = decided
        return verdict


def _text(data: bytes) -> str | None:
    if b"\0" in data[:_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def added_file_diff(path: str, text: str) -> str:
    """One file as a `new file` entry of a unified diff."""
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines.pop()
    body = "".join(f"+{line}\n" for line in lines)
    if not complete:
        body += "\\ No newline at end of file\n"
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


def _add(snapshot: RepoSnapshot, parts: list[str], path: str, size: int, limit: int,
         read: Callable[[], bytes]) -> None:
    """One file into the diff, or into `skipped` with why."""
    if size > limit:
        snapshot.skipped[path] = f"{size} bytes, over the {limit}-byte limit"
        return
    text = _text(read())
    if text is None:
        snapshot.skipped[path] = "binary"
    elif not text:
        snapshot.skipped[path] = "empty"
    else:
        parts.append(added_file_diff(path, text))
        snapshot.files.append(path)


def snapshot_folder(root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> RepoSnapshot:
    """The all-added diff of a repository folder (symbolic links are not followed: they may point anywhere)."""
    snapshot = RepoSnapshot(source=str(root), diff="")
    parts: list[str] = []
    ignores = _Ignores()

    def walk(folder: Path, relative: str) -> None:
        marker = folder / ".gitignore"
        if marker.is_file() and not marker.is_symlink():
            ignores.add(relative, marker.read_text(encoding="utf-8", errors="replace"))
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            path = f"{relative}/{entry.name}" if relative else entry.name
            if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
                continue
            if ignores.ignored(path, is_dir=entry.is_dir()):
                snapshot.ignored += 1
            elif entry.is_dir():
                walk(entry, path)
            else:
                _add(snapshot, parts, path, entry.stat().st_size, max_file_bytes, partial(entry.read_bytes))

    try:
        walk(root, "")
    except OSError as exc:
        raise InputError(f"cannot read the repository: {exc}", field=str(root)) from None
    snapshot.diff = "".join(parts)
    return snapshot


def _tar_root(names: list[str]) -> str:
    tops = {PurePosixPath(n).parts[0] for n in names if PurePosixPath(n).parts}
    if len(tops) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in names):
        return tops.pop()
    return ""


def snapshot_tar(archive: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> RepoSnapshot:
    """The all-added diff of a repository in a tar archive (any compression tarfile reads).

    Raises:
        InputError: naming the archive when it does not read as a tar.
    """
    snapshot = RepoSnapshot(source=str(archive), diff="")
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and _member_path(m.name)]
            names = [_member_path(m.name) for m in members]
            root = _tar_root(names)
            files = sorted(zip((n[len(root) + 1:] if root else n for n in names), members, strict=True),
                           key=lambda pair: pair[0])
            ignores = _Ignores({str(PurePosixPath(rel).parent).removeprefix("."): _read(tar, m).decode(
                "utf-8", "replace") for rel, m in files if PurePosixPath(rel).name == ".gitignore"})
            parts: list[str] = []
            for rel, member in files:
                if ignores.ignored(rel):
                    snapshot.ignored += 1
                else:
                    _add(snapshot, parts, rel, member.size, max_file_bytes, partial(_read, tar, member))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"not a readable tar archive: {exc}", field=str(archive)) from None
    snapshot.diff = "".join(parts)
    return snapshot


def _member_path(name: str) -> str:
    """A member's path, relative and without `..` (we never extract, but the diff names it)."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("/", ".", "..")]
    return "/".join(parts)


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    return handle.read() if handle is not None else b""


def snapshot_zip(archive: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> RepoSnapshot:
    """The all-added diff of a repository in a zip archive, read member by member as a tar is.

    Raises:
        InputError: naming the archive when it does not read as a zip.
    """
    snapshot = RepoSnapshot(source=str(archive), diff="")
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [m for m in bundle.infolist() if not m.is_dir() and _member_path(m.filename)]
            names = [_member_path(m.filename) for m in members]
            root = _tar_root(names)
            files = sorted(zip((n[len(root) + 1:] if root else n for n in names), members, strict=True),
                           key=lambda pair: pair[0])
            ignores = _Ignores({str(PurePosixPath(rel).parent).removeprefix("."): bundle.read(m).decode(
                "utf-8", "replace") for rel, m in files if PurePosixPath(rel).name == ".gitignore"})
            parts: list[str] = []
            for rel, member in files:
                if ignores.ignored(rel):
                    snapshot.ignored += 1
                else:
                    _add(snapshot, parts, rel, member.file_size, max_file_bytes, partial(bundle.read, member))
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as exc:
        raise InputError(f"not a readable zip archive: {exc}", field=str(archive)) from None
    snapshot.diff = "".join(parts)
    return snapshot


def snapshot_repository(path: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> RepoSnapshot:
    """A repository folder, tar archive or zip archive as an all-added diff.

    Raises:
        InputError: naming the path when it is none of these.
    """
    if path.is_dir():
        return snapshot_folder(path, max_file_bytes=max_file_bytes)
    if is_tar(path):
        return snapshot_tar(path, max_file_bytes=max_file_bytes)
    if path.is_file() and path.name.lower().endswith(ZIP_SUFFIX):
        return snapshot_zip(path, max_file_bytes=max_file_bytes)
    raise InputError("expected a repository folder or an archive (.tar, .tar.gz, .tgz, .zip, ...)", field=str(path))
