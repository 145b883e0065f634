"""Tests of judge.submission.diff: parsing real and synthetic diffs, strictness, hunk splitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.errors import MalformedDiffError
from judge.submission.diff import Hunk, parse_diff, split_hunk

CURIE = Path(__file__).resolve().parents[3].parent / "shared/data/expbench/historic_runs/curie_b1f623b"
CURIE_PATCHES = sorted(CURIE.rglob("*.patch"))

GIT_DIFF = """\
diff --git a/src/model.py b/src/model.py
index 83db48f..bf269f4 100644
--- a/src/model.py
+++ b/src/model.py
@@ -1,4 +1,5 @@ import torch
 import torch
-from old import thing
+from new import thing
+from new import other
 x = 0
 def f():
@@ -20,3 +21,2 @@ def g():
     a = 1
-    b = 2
     return a
diff --git a/docs/old_name.md b/docs/new_name.md
similarity index 100%
rename from docs/old_name.md
rename to docs/new_name.md
diff --git a/lib/util.py b/lib/helpers.py
similarity index 80%
rename from lib/util.py
rename to lib/helpers.py
index 1111111..2222222 100644
--- a/lib/util.py
+++ b/lib/helpers.py
@@ -1,2 +1,2 @@
-def util(): pass
+def helper(): pass
 x = 1
diff --git a/assets/logo.png b/assets/logo.png
index 3333333..4444444 100644
Binary files a/assets/logo.png and b/assets/logo.png differ
diff --git a/assets/new.bin b/assets/new.bin
new file mode 100644
index 0000000..5555555
Binary files /dev/null and b/assets/new.bin differ
diff --git a/scripts/run.sh b/scripts/run.sh
new file mode 100755
index 0000000..6666666
--- /dev/null
+++ b/scripts/run.sh
@@ -0,0 +1,2 @@
+#!/bin/bash
+python train.py
diff --git a/legacy.py b/legacy.py
deleted file mode 100644
index 7777777..0000000
--- a/legacy.py
+++ /dev/null
@@ -1 +0,0 @@
-print("bye")
diff --git a/bin/tool b/bin/tool
old mode 100644
new mode 100755
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
"""


def _count_marked_lines(patch: str) -> tuple[int, int]:
    added = sum(1 for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++ "))
    removed = sum(1 for line in patch.splitlines() if line.startswith("-") and not line.startswith("--- "))
    return added, removed


def test_curie_patches_exist() -> None:
    assert len(CURIE_PATCHES) >= 8
    assert any(p.stat().st_size == 0 for p in CURIE_PATCHES)


@pytest.mark.parametrize("patch_path", CURIE_PATCHES, ids=lambda p: f"{p.parent.name}/{p.name[:24]}")
def test_real_curie_patches_parse(patch_path: Path) -> None:
    text = patch_path.read_text()
    parsed = parse_diff(text)
    if not text.strip():
        assert parsed.is_empty
        assert parsed.hunks == []
        return
    assert not parsed.is_empty
    added, removed = _count_marked_lines(text)
    assert sum(f.added_lines for f in parsed.files) == added
    assert sum(f.removed_lines for f in parsed.files) == removed
    assert len(parsed.files) == text.count("\ndiff -urN ") + text.startswith("diff -urN ")
    for hunk in parsed.hunks:
        assert hunk.text in text  # verbatim, so evidence quotes can be checked against the patch
        assert hunk.text.startswith(hunk.header)
        assert not hunk.file_path.startswith(("a/", "b/"))
    assert [h.id for h in parsed.hunks] == [f"h{i}" for i in range(1, len(parsed.hunks) + 1)]


def test_curie_multi_file_patch_details() -> None:
    patch = next(p for p in CURIE_PATCHES if "azure-gpt-4o" in str(p) and "task_index_4_" in p.name)
    parsed = parse_diff(patch.read_text())
    assert [f.status for f in parsed.files] == ["added", "added", "added"]
    assert [Path(f.path).name for f in parsed.files] == [
        "control_experiment_c3c47541-645b-4006-99aa-0455f375a418_control_group_partition_1.sh",
        "trajectory_analysis.py",
        "trajectory_upsampling.py",
    ]
    analysis = parsed.files[1]
    # diff -urN keeps the new path as written (absolute), minus nothing: it has no a/ b/ prefix.
    assert analysis.path.startswith("/Users/")
    assert analysis.old_path is None
    assert analysis.hunks[0].header == "@@ -0,0 +1,55 @@"
    assert analysis.added_lines == 55 == len(analysis.hunks[0].added)
    assert analysis.hunks[0].added[0] == "import argparse"
    assert parsed.touched_paths() == [f.path for f in parsed.files]


def test_curie_modified_file_with_context() -> None:
    patch = next(p for p in CURIE_PATCHES if "azure-gpt-4o" in str(p) and "task_index_3_" in p.name)
    parsed = parse_diff(patch.read_text())
    modified = [f for f in parsed.files if f.status == "modified"]
    assert len(modified) == 1
    assert modified[0].old_path is not None
    assert modified[0].added_lines == len(modified[0].hunks[0].added) > 0


def test_git_diff_statuses_paths_and_counts() -> None:
    parsed = parse_diff(GIT_DIFF)
    by_path = {f.path: f for f in parsed.files}
    assert list(by_path) == [
        "src/model.py",
        "docs/new_name.md",
        "lib/helpers.py",
        "assets/logo.png",
        "assets/new.bin",
        "scripts/run.sh",
        "legacy.py",
        "bin/tool",
        "empty.txt",
    ]
    model = by_path["src/model.py"]
    assert (model.status, model.old_path, model.added_lines, model.removed_lines) == (
        "modified",
        "src/model.py",
        2,
        2,
    )
    assert [h.id for h in model.hunks] == ["h1", "h2"]
    assert model.hunks[0].header == "@@ -1,4 +1,5 @@ import torch"
    assert model.hunks[0].added == ["from new import thing", "from new import other"]
    assert model.hunks[0].removed == ["from old import thing"]
    assert model.hunks[1].removed == ["    b = 2"]
    assert by_path["docs/new_name.md"].status == "renamed"
    assert by_path["docs/new_name.md"].old_path == "docs/old_name.md"
    assert by_path["docs/new_name.md"].hunks == []
    helpers = by_path["lib/helpers.py"]
    assert (helpers.status, helpers.old_path, helpers.hunks[0].id) == ("renamed", "lib/util.py", "h3")
    assert helpers.hunks[0].file_path == "lib/helpers.py"
    assert by_path["assets/logo.png"].status == "binary"
    assert by_path["assets/new.bin"].status == "binary"
    assert by_path["scripts/run.sh"].status == "added"
    assert by_path["scripts/run.sh"].old_path is None
    assert by_path["scripts/run.sh"].hunks[0].added == ["#!/bin/bash", "python train.py"]
    assert by_path["legacy.py"].status == "removed"
    assert by_path["legacy.py"].removed_lines == 1
    assert by_path["bin/tool"].status == "modified"
    assert by_path["empty.txt"].status == "added"
    assert len(parsed.hunks) == 5
    assert parsed.hunk_by_id("h4") is parsed.files[5].hunks[0]
    assert parsed.hunk_by_id("h99") is None
    for hunk in parsed.hunks:
        assert hunk.text in GIT_DIFF


def test_diff_urn_binary_and_only_in_lines() -> None:
    text = (
        "Only in b/data: cache\n"
        "diff -urN a/img.png b/img.png\n"
        "Binary files a/img.png and b/img.png differ\n"
        "diff -urN a/x.py b/x.py\n"
        "--- a/x.py\t2024-01-01 00:00:00.000000000 +0000\n"
        "+++ b/x.py\t2024-01-02 00:00:00.000000000 +0000\n"
        "@@ -1 +1 @@\n"
        "-a = 1\n"
        "+a = 2\n"
    )
    parsed = parse_diff(text)
    assert [(f.path, f.status) for f in parsed.files] == [("img.png", "binary"), ("x.py", "modified")]
    assert parsed.hunks[0].header == "@@ -1 +1 @@"
    assert parsed.hunks[0].added == ["a = 2"]


def test_no_newline_marker_kept_in_text_not_in_lines() -> None:
    text = (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n"
        "\\ No newline at end of file\n"
    )
    hunk = parse_diff(text).hunks[0]
    assert hunk.added == ["new"] and hunk.removed == ["old"]
    assert hunk.text.endswith("\\ No newline at end of file")
    assert hunk.text.count("No newline") == 2


def test_crlf_line_endings_are_not_kept_in_lines() -> None:
    text = "--- a/w.bat\r\n+++ b/w.bat\r\n@@ -1,2 +1,2 @@\r\n echo on\r\n-set A=1\r\n+set A=2\r\n"
    hunk = parse_diff(text).hunks[0]
    assert hunk.added == ["set A=2"] and hunk.removed == ["set A=1"]


def test_commit_message_preamble_and_format_patch_trailer_are_allowed() -> None:
    text = (
        "From 0123456789abcdef Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\nBody text.\n---\n"
        " f.py | 2 +-\n 1 file changed\n\n"
        "diff --git a/f.py b/f.py\nindex 1111111..2222222 100644\n--- a/f.py\n+++ b/f.py\n"
        "@@ -1 +1 @@\n-x = 1\n+x = 2\n-- \n2.39.2\n\n"
    )
    parsed = parse_diff(text)
    assert parsed.touched_paths() == ["f.py"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t\n"])
def test_blank_input_is_an_empty_diff(blank: str) -> None:
    parsed = parse_diff(blank)
    assert parsed.is_empty and parsed.files == [] and parsed.touched_paths() == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("This is my conclusion.\nThe model works well.\n", "not a unified diff"),
        ("--- not a header\njust prose\n", "not a unified diff"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n", "line 6: Hunk is shorter than expected"),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\nGARBAGE LINE\n-b\n+c\n", "line 5: Hunk diff line expected"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n+c\n+d\n", "line 6: hunk line '+d' beyond the line counts"),
        ("--- a/x\n+++ b/x\n", "has no hunks"),
        (
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n+c\nrandom words here\n"
            "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-b\n+c\n",
            "line 6: unexpected text outside any hunk: 'random words here'",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n+c\nstray text\n"
            "diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-b\n+c\n",
            "line 7: unexpected text",
        ),
        ("@@ -1 +1 @@\n-a\n+b\n", "line 1: Unexpected hunk found: @@ -1 +1 @@"),
    ],
)
def test_malformed_diffs_raise_with_location(text: str, expected: str) -> None:
    with pytest.raises(MalformedDiffError) as info:
        parse_diff(text)
    assert info.value.field == "diff"
    assert expected in info.value.message
    assert str(info.value).startswith("diff: ")
    assert not info.value.message.endswith("\n")


def _added_file_diff(n_lines: int, path: str = "big/generated.py") -> str:
    body = "".join(f"+value_{i} = {i}\n" for i in range(n_lines))
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{n_lines} @@\n{body}"


def test_large_added_file_is_split_into_valid_pieces() -> None:
    parsed = parse_diff(_added_file_diff(5000), max_hunk_lines=200)
    pieces = parsed.hunks
    assert [p.id for p in pieces] == [f"h1.{i}" for i in range(1, 26)]
    assert parsed.files[0].added_lines == 5000
    assert [line for p in pieces for line in p.added] == [f"value_{i} = {i}" for i in range(5000)]
    for index, piece in enumerate(pieces):
        assert piece.header == f"@@ -0,0 +{1 + 200 * index},200 @@"
        # Each piece is itself a well-formed hunk: its header counts match its lines.
        reparsed = parse_diff(f"--- a/{piece.file_path}\n+++ b/{piece.file_path}\n{piece.text}\n")
        assert reparsed.hunks[0].added == piece.added


def test_split_hunk_with_context_and_removals_keeps_every_line() -> None:
    body = []
    for i in range(30):
        body += [f" ctx {i}", f"-old {i}", f"+new {i}", f"+extra {i}"]
    text = "--- a/m.py\n+++ b/m.py\n@@ -10,60 +10,90 @@ class M:\n" + "\n".join(body) + "\n"
    hunk = parse_diff(text).hunks[0]
    pieces = split_hunk(hunk, 7)
    assert len(pieces) == -(-120 // 7)
    assert [line for p in pieces for line in p.added] == hunk.added
    assert [line for p in pieces for line in p.removed] == hunk.removed
    for piece in pieces:
        assert piece.header.endswith(" @@ class M:")
        reparsed = parse_diff(f"--- a/m.py\n+++ b/m.py\n{piece.text}\n")
        assert reparsed.hunks[0].removed == piece.removed
    assert pieces[1].header.startswith("@@ -")
    second_source_start = int(pieces[1].header.split()[1].split(",")[0][1:])
    assert second_source_start == 10 + sum(1 for line in body[:7] if not line.startswith("+"))


def test_split_hunk_leaves_small_hunks_alone() -> None:
    hunk = parse_diff(GIT_DIFF).hunks[0]
    assert split_hunk(hunk, 200) == [hunk]
    with pytest.raises(ValueError):
        split_hunk(hunk, 0)


def test_searchable_text_has_path_and_changed_lines() -> None:
    hunk = Hunk(id="h1", file_path="src/a.py", header="@@ -1 +1 @@", added=["new()"], removed=["old()"])
    assert hunk.searchable_text() == "src/a.py\nnew()\nold()"
    real = parse_diff(GIT_DIFF).hunks[0]
    text = real.searchable_text()
    assert text.startswith("src/model.py\n")
    assert "from new import other" in text and "from old import thing" in text
    assert "def f():" not in text  # context lines are not part of what the hunk changes


def test_synthetic_200k_token_diff_parses_with_correct_counts() -> None:
    n_files, hunks_per_file, context = 150, 12, 24
    parts = []
    for f in range(n_files):
        parts.append(
            f"diff --git a/pkg/module_{f}.py b/pkg/module_{f}.py\nindex 0123456..789abcd 100644\n"
            f"--- a/pkg/module_{f}.py\n+++ b/pkg/module_{f}.py\n"
        )
        for h in range(hunks_per_file):
            start = 1 + 100 * h
            parts.append(f"@@ -{start},{context + 1} +{start},{context + 2} @@ def fn_{h}():\n")
            parts.extend(
                f"     context_{i} = compute(alpha={i}, beta='some text here')\n" for i in range(context)
            )
            parts.append(f"-    result = old_call({f}, {h})\n")
            parts.append(f"+    result = new_call({f}, {h}, scale=0.5)\n")
            parts.append(f"+    logger.info('file {f} hunk {h}: %s', result)\n")
    text = "".join(parts)
    assert len(text) / 4 > 200_000  # ~4 characters per token
    parsed = parse_diff(text)
    assert len(parsed.files) == n_files
    assert len(parsed.hunks) == n_files * hunks_per_file
    assert all(
        f.added_lines == 2 * hunks_per_file and f.removed_lines == hunks_per_file for f in parsed.files
    )
    assert parsed.hunks[-1].id == f"h{n_files * hunks_per_file}"
    assert (
        parsed.hunks[-1].added[0] == f"    result = new_call({n_files - 1}, {hunks_per_file - 1}, scale=0.5)"
    )
    assert parsed.touched_paths()[7] == "pkg/module_7.py"


def test_blank_context_lines_are_kept() -> None:
    # Editors strip the single space of blank context lines; the hunk must keep them to stay well-formed.
    text = "--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n-a = 1\n+a = 2\n\n\n"
    hunk = parse_diff(text).hunks[0]
    assert hunk.text == "@@ -1,3 +1,3 @@\n-a = 1\n+a = 2\n\n"
    (piece,) = split_hunk(hunk, 10)
    assert piece is hunk
    pieces = split_hunk(hunk, 2)
    assert [p.header for p in pieces] == ["@@ -1,1 +1,1 @@", "@@ -2,2 +2,2 @@"]


# Empty files as real tools write them (issue 12): a body-less hunk, or git's hunkless entry with or without
# its ---/+++ pair. Each must parse as an added file with no lines, wherever it stands in the diff.
_CODE_ENTRY = (
    "diff --git a/src/x.py b/src/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/x.py\n"
    "@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
)
_EMPTY_ENTRIES = {
    "git-bodyless-hunk": "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
    "--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1,0 @@\n",
    "plain-bodyless-hunk": "--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1,0 @@\n",
    "git-no-hunk-with-headers": "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
    "--- /dev/null\n+++ b/e.txt\n",
    "git-no-hunk-no-headers": "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n",
    "git-full-index-sha256": "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex "
    + "0" * 64 + "..473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813\n--- /dev/null\n+++ b/e.txt\n",
}


@pytest.mark.parametrize("form", sorted(_EMPTY_ENTRIES))
@pytest.mark.parametrize("position", ["alone", "first", "middle", "last"])
def test_empty_file_entries_parse_as_added_files_without_lines(form: str, position: str) -> None:
    empty = _EMPTY_ENTRIES[form]
    other = _CODE_ENTRY.replace("src/x.py", "src/y.py")
    text = {"alone": empty, "first": empty + _CODE_ENTRY, "middle": _CODE_ENTRY + empty + other,
            "last": _CODE_ENTRY + empty}[position]
    parsed = parse_diff(text)
    (entry,) = [f for f in parsed.files if f.path == "e.txt"]
    assert (entry.status, entry.old_path, entry.hunks, entry.added_lines, entry.removed_lines) == (
        "added", None, [], 0, 0)
    assert "e.txt" in parsed.touched_paths()
    code_files = [f for f in parsed.files if f.path != "e.txt"]
    assert len(code_files) == {"alone": 0, "first": 1, "middle": 2, "last": 1}[position]
    assert all(f.hunks[0].added == ["a = 1", "b = 2"] for f in code_files)
    assert [h.id for h in parsed.hunks] == [f"h{i}" for i in range(1, len(code_files) + 1)]
    assert all(h.text in text for h in parsed.hunks)


def test_deleted_empty_file_in_both_forms() -> None:
    git = "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex e69de29..0000000\n"
    plain = "--- a/gone.txt\n+++ /dev/null\n@@ -1,0 +0,0 @@\n"
    for text in (git, plain, git + _CODE_ENTRY, plain + _CODE_ENTRY):
        entry = parse_diff(text).files[0]
        assert (entry.path, entry.status, entry.hunks) == ("gone.txt", "removed", [])


@pytest.mark.parametrize(
    ("text", "path", "status", "old_path"),
    [
        ("diff --git a/t.sh b/t.sh\nold mode 100644\nnew mode 100755\n", "t.sh", "modified", "t.sh"),
        ("diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n", "b.py",
         "renamed", "a.py"),
        ("diff --git a/a.py b/c.py\nsimilarity index 100%\ncopy from a.py\ncopy to c.py\n", "c.py", "renamed",
         "a.py"),
        ("diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n--- a/a.py\n"
         "+++ b/b.py\n", "b.py", "renamed", "a.py"),
        ("diff --git a/t.sh b/t.sh\nold mode 100644\nnew mode 100755\nindex 1234567..1234567\n--- a/t.sh\n"
         "+++ b/t.sh\n", "t.sh", "modified", "t.sh"),
        ("diff --git a/m.bin b/m.bin\nnew file mode 100644\nindex 0000000..5555555\n"
         "Binary files /dev/null and b/m.bin differ\n", "m.bin", "binary", None),
        ("Binary files /dev/null and b/m.bin differ\n", "m.bin", "binary", None),
        ("diff --git a/m.bin b/m.bin\nnew file mode 100644\nindex 0000000..5555555\nGIT binary patch\n"
         "literal 5\nMcmZ?wbYNfr0000\n\nliteral 0\nHcmV?d00001\n\n", "m.bin", "binary", None),
        ("diff --git a/m.bin b/m.bin\nindex 1111111..2222222 100644\nGIT binary patch\ndelta 12\n"
         "TcmZ?wbYNfr0000aaaaaaa\n\ndelta 12\nTcmZ?wbYNfr0000bbbbbbb\n\n", "m.bin", "binary", "m.bin"),
    ],
    ids=["mode", "rename", "copy", "rename-with-headers", "mode-with-headers", "binary-git", "binary-plain",
         "git-binary-literal", "git-binary-delta"],
)
def test_entries_that_change_no_line_are_kept_not_refused(
    text: str, path: str, status: str, old_path: str | None
) -> None:
    for whole in (text, text + _CODE_ENTRY, _CODE_ENTRY + text):
        parsed = parse_diff(whole)
        (entry,) = [f for f in parsed.files if f.path == path]
        assert (entry.status, entry.old_path, entry.hunks) == (status, old_path, [])
        assert len(parsed.files) == 1 + (whole != text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # git's header names a non-empty blob: the hunk that should show it was cut off.
        ("diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..5555555\n--- /dev/null\n"
         "+++ b/e.txt\n", "line 1: file header for 'e.txt' has no hunks"),
        ("diff --git a/a.py b/b.py\nsimilarity index 90%\nrename from a.py\nrename to b.py\n--- a/a.py\n"
         "+++ b/b.py\n", "has no hunks"),
        # Without git's header nothing says the file is empty.
        ("--- /dev/null\n+++ b/e.txt\n", "line 2: file header for 'e.txt' has no hunks"),
        # A body-less hunk header takes no body line.
        ("--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1,0 @@\n+stray\n", "line 4: hunk line '+stray' beyond the line"),
        # Line numbers still count the body-less header that unidiff is not shown.
        ("--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1,0 @@\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n",
         "line 8: Hunk is shorter than expected"),
        ("--- /dev/null\n+++ b/e.txt\n@@ -0,0 +1,0 @@\n--- a/x\n+++ b/x\n", "line 5: file header for 'x'"),
        # After a binary patch's reverse block, prose is still prose.
        ("diff --git a/m.bin b/m.bin\nindex 0000000..5555555\nGIT binary patch\nliteral 5\nMcmZ?wbYNfr0000\n\n"
         "literal 0\nHcmV?d00001\n\nthis is prose\n", "line 10: unexpected text outside any hunk"),
        ("diff --git a/m.bin b/m.bin\nindex 0000000..5555555\nGIT binary patch\nliteral 5\nMcmZ?wbYNfr0000\n\n"
         "literal 0\nHcmV?d00001\n\nliteral 9\n", "line 10: unexpected text outside any hunk"),
    ],
)
def test_hunkless_entries_that_promise_lines_still_raise(text: str, expected: str) -> None:
    with pytest.raises(MalformedDiffError) as info:
        parse_diff(text)
    assert info.value.field == "diff"
    assert expected in info.value.message


def test_bodyless_hunk_of_a_git_entry_ends_it_before_a_plain_entry() -> None:
    # unidiff folds a ---/+++ pair into a git entry until a hunk header closes that entry's header block.
    text = (
        "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/e.txt\n"
        "@@ -0,0 +1,0 @@\n--- /dev/null\n+++ b/p.py\n@@ -0,0 +1 @@\n+p = 1\n"
    )
    parsed = parse_diff(text)
    assert [(f.path, f.status, len(f.hunks)) for f in parsed.files] == [("e.txt", "added", 0), ("p.py", "added", 1)]
    assert parsed.hunks[0].text == "@@ -0,0 +1 @@\n+p = 1"
    with pytest.raises(MalformedDiffError, match="line 1: Unexpected hunk found"):
        parse_diff("@@ -0,0 +1,0 @@\n--- /dev/null\n+++ b/p.py\n@@ -0,0 +1 @@\n+p = 1\n")
