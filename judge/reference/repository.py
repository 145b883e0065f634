"""A task's reference files read from the paper's repository as a user has it: a folder or a tar archive.

EXP-Bench names a task's ground-truth scripts by their path in the benchmark's container
(`/workspace/<path in the repository>`): `masked_source` (removed from the agent's workspace) and
`source` (left in it). `with_reference_repo` reads those files, and the other files the requirements
cite, from a checkout or an archive of the repository (a tar's single top folder, as GitHub archives
have, is read as the root), and adds them to the task as `reference_files`. A named file that is not
there, or not text, is a warning naming it, never an error: the task grades without it.
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from judge.errors import MalformedDiffError, TaskFormatError
from judge.models import ReferenceFile, Task
from judge.reference.sources import parse_citations, reference_sources, repository_path, resolve_path

# Largest reference file read: a ground-truth script, not a data file or a checkpoint.
MAX_FILE_BYTES = 2_000_000
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


class ReferenceRepository:
    """The files of a repository, from a folder or a tar archive, by path relative to its root.

    Args:
        location: A folder (the repository's root) or a .tar/.tar.gz/.tgz/.tar.bz2/.tar.xz archive of it.

    Raises:
        TaskFormatError: naming `--reference-repo` when the location is neither, or the archive is unreadable.
    """

    def __init__(self, location: Path) -> None:
        self.location = location
        self._tar: tarfile.TarFile | None = None
        self._members: dict[str, tarfile.TarInfo] = {}
        if location.is_dir():
            self.paths = sorted(p.relative_to(location).as_posix() for p in location.rglob("*")
                                if p.is_file() and ".git" not in p.relative_to(location).parts)
        elif location.is_file() and location.name.lower().endswith(_TAR_SUFFIXES):
            try:
                self._tar = tarfile.open(location)  # noqa: SIM115 - kept open to read members on demand
                members = [m for m in self._tar.getmembers() if m.isfile()]
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise TaskFormatError(f"cannot read the archive: {exc}", field=f"--reference-repo {location}") \
                    from None
            names = [PurePosixPath(m.name.removeprefix("./")) for m in members]
            tops = {name.parts[0] for name in names if len(name.parts) > 1}
            strip = len(tops) == 1 and all(len(name.parts) > 1 for name in names)
            for member, name in zip(members, names, strict=True):
                relative = PurePosixPath(*name.parts[1:]) if strip else name
                if ".." not in relative.parts and ".git" not in relative.parts:
                    self._members[relative.as_posix()] = member
            self.paths = sorted(self._members)
        else:
            raise TaskFormatError("expected a folder or a .tar/.tar.gz archive of the paper's repository",
                                  field=f"--reference-repo {location}")

    def close(self) -> None:
        """Close the archive (a folder holds nothing open)."""
        if self._tar is not None:
            self._tar.close()

    def __enter__(self) -> ReferenceRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, path: str) -> str | None:
        """The text of the file at `path` (relative to the root); None when it is too big or not UTF-8."""
        if self._tar is not None:
            member = self._members[path]
            if member.size > MAX_FILE_BYTES:
                return None
            handle = self._tar.extractfile(member)
            data = handle.read() if handle is not None else b""
        else:
            file = self.location / path
            if file.stat().st_size > MAX_FILE_BYTES:
                return None
            data = file.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def named_reference_paths(task: Task) -> list[tuple[str, bool]]:
    """(path relative to the repository root, masked) of every file the task names as its reference:
    `masked_source` (masked), `source`, and the files its requirements cite (not masked), in that order.

    A native task's `source_files` stand in when its metadata names neither (not masked: a native task says
    which files were hidden by giving `reference_files` itself).
    """
    masked = [str(p) for p in task.metadata.get("masked_source") or []]
    shown = [str(p) for p in task.metadata.get("source") or []]
    if not masked and not shown:
        shown = list(task.source_files)
    cited = [c.path for r in task.requirements for c in parse_citations(r)]
    named: dict[str, bool] = {}
    for raw, is_masked in [*((p, True) for p in masked), *((p, False) for p in [*shown, *cited])]:
        path = repository_path(raw)
        if path and not path.endswith("/"):
            named.setdefault(path, is_masked)
    return list(named.items())


def with_reference_repo(task: Task, repository: ReferenceRepository) -> tuple[Task, list[str]]:
    """`task` with the files it names read from `repository` as its `reference_files`, and a warning per
    named file that could not be read (the task's own `reference_files` are kept and win).

    A path not in the repository is looked up by its last components, then its file name, when exactly
    one file matches (EXP-Bench paths are sometimes off by a folder).
    """
    warnings: list[str] = []
    files = {file.path: file for file in task.reference_files}
    missing: list[str] = []
    for path, masked in named_reference_paths(task):
        found = path if path in repository.paths else resolve_path(path, repository.paths)
        if found is None:
            missing.append(path)
            continue
        text = repository.read(found)
        if text is None:
            warnings.append(f"reference file {found} skipped: over {MAX_FILE_BYTES} bytes or not UTF-8 text")
            continue
        if found not in files:
            files[found] = ReferenceFile(path=found, text=text, masked=masked)
    if missing:
        warnings.append(f"task {task.task_id}: reference files not found in {repository.location}: "
                        + ", ".join(missing))
    try:
        updated = Task.model_validate({**task.model_dump(), "reference_files": list(files.values())})
    except ValidationError as exc:
        raise TaskFormatError(str(exc.errors()[0]["msg"]), field=f"{task.task_id}.reference_files") from None
    return updated, warnings


def load_reference_repo(location: Path) -> ReferenceRepository:
    """Open `--reference-repo` (see `ReferenceRepository`)."""
    return ReferenceRepository(location)


def with_given_reference(task: Task, files: list[ReferenceFile], ground_truth_diff: str | None,
                         *, field: str = "task") -> Task:
    """`task` with a reference a client sent beside it (e.g. with an EXP-Bench task entry), checked.

    A file whose `masked` was not given is masked when the task names it in `masked_source` (or names no
    `masked_source` at all); a file only in `source` was in the agent's workspace.

    Raises:
        TaskFormatError: a file given twice (`<field>.reference_files`).
        MalformedDiffError: a `ground_truth_diff` that is not a unified diff (`<field>.ground_truth_diff`).
    """
    named = named_reference_paths(task)
    masked_named = [path for path, masked in named if masked]
    settled: list[ReferenceFile] = []
    for file in files:
        if "masked" not in file.model_fields_set and masked_named:
            found = file.path in masked_named or resolve_path(file.path, masked_named) is not None
            file = file.model_copy(update={"masked": found})
        settled.append(file)
    update: dict[str, object] = {"reference_files": [*task.reference_files, *settled]}
    if ground_truth_diff is not None:
        update["ground_truth_diff"] = ground_truth_diff
    try:
        updated = Task.model_validate({**task.model_dump(), **update})
    except ValidationError as exc:
        raise TaskFormatError(str(exc.errors()[0]["msg"]), field=f"{field}.reference_files") from None
    check_reference(updated, field=field)
    return updated


def check_reference(task: Task, *, field: str = "task") -> None:
    """Fail fast on a reference that cannot be read (a `ground_truth_diff` that does not parse).

    Raises:
        MalformedDiffError: naming `<field>.ground_truth_diff`.
    """
    try:
        reference_sources(task)
    except MalformedDiffError as exc:
        raise MalformedDiffError(exc.message, field=f"{field}.ground_truth_diff") from None


def parse_reference_repos(values: list[str]) -> dict[str, Path]:
    """`--reference-repo` values, `[PAPER=]DIR|TAR`, as paper id -> repository ("*": every paper), each
    checked to be a folder or a readable archive.

    Raises:
        TaskFormatError: naming `--reference-repo` for a location that is neither, or a paper given twice.
    """
    repos: dict[str, Path] = {}
    for value in values:
        paper, sep, location = value.partition("=")
        if not sep or "/" in paper or not paper:
            paper, location = "*", value
        if paper in repos:
            raise TaskFormatError(f"a repository for {'every paper' if paper == '*' else 'paper ' + paper} is "
                                  "given twice (use PAPER=DIR|TAR for each paper)", field=f"--reference-repo {value}")
        ReferenceRepository(Path(location)).close()  # fail fast, before any run is read
        repos[paper] = Path(location)
    return repos
