"""A diff's new code is cut into citable units with line roles, for every language research repos hold."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from judge.submission.code_terms import split_identifier, terms
from judge.submission.code_units import (
    CodeUnit,
    executable_text,
    identifier_words,
    post_images,
    prose_text,
    unit_hunk_ids,
    unit_identifiers,
    units_from_diff,
)
from judge.submission.diff import parse_diff
from tests.judge.submission.code_fixtures import added_file

PYTHON = '''"""Train a policy with SAC."""
import os
import torch


# Load weights saved by an earlier run.
def load_model(path):
    """Load a pre-trained model from a checkpoint file."""
    # torch.load restores the state dict
    model = torch.load(path)
    print("Loaded the model from the checkpoint file")
    return model


def restated_only():
    """Compute the Jensen-Shannon divergence of the torsion angles."""
    # Compute the Jensen-Shannon divergence of the torsion angles.
    pass


class Trainer:
    """Runs the training loop."""

    lr = 0.001

    def step(self, batch):
        return batch * self.lr
'''

SHELL = """#!/bin/bash
# Sweep the sparse Hopper environment over seeds.
set -e
ENV=SparseHopper-v1

train() {
  # one seed
  python train.py --env "$ENV" --seed "$1"
}

for seed in 1 2 3; do
  train "$seed"
done
"""

YAML = """# Experiment configuration
model:
  name: resnet
  depth: 50
optimizer:
  lr: 0.001  # learning rate
  type: adam
seed: 1
"""

CUDA = """#include <cuda_runtime.h>
namespace kernels {
// Scale every element.
__global__ void scale(float* x, float factor) {
  x[threadIdx.x] *= factor;
}

struct Config {
  int blocks;
};
}  // namespace kernels
"""

MARKDOWN = """# Project

Intro.

## Training

```bash
python train.py --algo sac
```

## Evaluation
Run eval.py.
"""


def _notebook() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "Plot the autocorrelation."]},
        {"cell_type": "code", "execution_count": 1, "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["def not_code():\n"]}],
         "source": ["import numpy as np\n", "# helper\n", "def acf(x):\n", "    \"\"\"ACF.\"\"\"\n",
                    "    return np.correlate(x, x)\n", "\n", "print(acf([1, 2]))"]},
    ]
    notebook = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1, sort_keys=True) + "\n"


def units_of(path: str, text: str) -> list[CodeUnit]:
    return units_from_diff(parse_diff(added_file(path, text)))


def by_name(units: list[CodeUnit], name: str) -> CodeUnit:
    return next(u for u in units if u.name == name)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), start=1) if needle in line)


def test_python_is_cut_into_functions_classes_and_blocks_with_line_numbers_of_the_new_file() -> None:
    units = units_of("train.py", PYTHON)
    kinds = [(u.kind, u.name) for u in units]
    assert kinds == [("block", ""), ("function", "load_model"), ("function", "restated_only"),
                     ("class", "Trainer")]
    load = by_name(units, "load_model")
    assert load.start_line == line_of(PYTHON, "# Load weights")  # the comment right above goes with it
    assert load.end_line == line_of(PYTHON, "return model")
    assert load.lines[0] == "# Load weights saved by an earlier run."
    assert load.id == f"train.py:{load.start_line}-{load.end_line}"
    assert load.added_lines == len(load.lines)


def test_comments_docstrings_and_prose_strings_are_not_executable() -> None:
    units = units_of("train.py", PYTHON)
    load = by_name(units, "load_model")
    roles = dict(zip(load.lines, load.roles, strict=True))
    assert roles['    """Load a pre-trained model from a checkpoint file."""'] == "docstring"
    assert roles["    # torch.load restores the state dict"] == "comment"
    code = executable_text(load)
    assert "model = torch.load(path)" in code and "return model" in code
    assert "checkpoint" not in code  # the docstring, the comment and the printed message are gone
    assert 'print("")' in code
    assert "checkpoint" in prose_text(load)
    assert load.executable_share == pytest.approx(4 / 7)
    restated = by_name(units, "restated_only")
    assert executable_text(restated) == "def restated_only():\n    pass"
    assert restated.role_shares()["code"] == pytest.approx(0.5)


def test_identifiers_are_split_at_underscores_case_and_digits() -> None:
    assert split_identifier("load_from_checkpoint") == ["load", "from", "checkpoint"]
    assert split_identifier("camelCaseName") == ["camel", "case", "name"]
    assert split_identifier("HTTPServer2") == ["http", "server", "2"]
    unit = by_name(units_of("train.py", PYTHON), "load_model")
    assert unit_identifiers(unit) == ["def", "load_model", "path", "model", "torch", "load", "print", "return"]
    assert identifier_words(unit)[:4] == ["def", "load", "model", "path"]
    assert "checkpoint" not in identifier_words(unit)


def test_short_string_literals_stay_executable_because_they_decide_what_code_does() -> None:
    unit = units_of("run.py", 'import gym\nenv = gym.make("Hopper-v4")\nalgo = "sac"\n')[0]
    assert 'gym.make("Hopper-v4")' in executable_text(unit) and '"sac"' in executable_text(unit)
    assert {"hopper", "v4", "sac"} <= set(terms(executable_text(unit)))


def test_shell_scripts_have_functions_comments_and_command_blocks() -> None:
    units = units_of("scripts/sweep.sh", SHELL)
    assert [(u.kind, u.name) for u in units] == [("block", ""), ("function", "train"), ("block", "")]
    header = units[0]
    assert header.roles[:2] == ("comment", "comment")  # the shebang and the comment
    assert "SparseHopper-v1" in executable_text(header) and "Sweep" not in executable_text(header)
    assert units[2].lines[0] == "for seed in 1 2 3; do"


def test_yaml_top_level_keys_are_config_sections() -> None:
    units = units_of("configs/exp.yaml", YAML)
    assert [(u.kind, u.name) for u in units] == [("config", "model"), ("config", "optimizer"), ("config", "seed")]
    assert units[0].lines[0] == "# Experiment configuration"
    optimizer = units[1]
    assert "lr: 0.001" in executable_text(optimizer) and "learning rate" not in executable_text(optimizer)
    assert optimizer.executable_share == 1.0


def test_toml_tables_and_json_keys_are_config_sections() -> None:
    toml = units_of("pyproject.toml", 'title = "x"\n[train]\nlr = 1e-3\nepochs = 10\n[[runs]]\nseed = 2\n')
    assert [u.name for u in toml] == ["title", "train", "runs"]
    data = units_of("params.json", '{\n  "lr": 0.1,\n  "model": {\n    "depth": 50\n  }\n}\n')
    assert {u.kind for u in data} == {"config"} and any(u.name == "model" for u in data)


def test_cuda_and_cpp_definitions_are_found_inside_namespaces() -> None:
    units = units_of("csrc/scale.cu", CUDA)
    names = {u.name: u for u in units}
    assert names["scale"].kind == "function" and names["Config"].kind == "class"
    assert names["scale"].lines[0] == "// Scale every element."
    assert names["scale"].roles[0] == "comment"
    assert "threadIdx" in executable_text(names["scale"])


def test_markdown_is_cut_at_headings_and_its_code_blocks_count_as_code() -> None:
    units = units_of("README.md", MARKDOWN)
    assert [(u.kind, u.name) for u in units] == [("doc", "Project"), ("doc", "Training"), ("doc", "Evaluation")]
    training = units[1]
    assert "python train.py --algo sac" in executable_text(training)
    assert units[0].executable_share == 0.0


def test_notebook_code_cells_are_parsed_and_mapped_to_json_lines() -> None:
    text = _notebook()
    units = units_of("analysis.ipynb", text)
    acf = by_name(units, "acf")
    assert acf.kind == "function" and acf.language == "notebook"
    assert acf.lines == ("# helper", "def acf(x):", '    """ACF."""', "    return np.correlate(x, x)")
    assert acf.start_line == line_of(text, '"# helper\\n"')
    assert acf.end_line == line_of(text, "return np.correlate")
    assert acf.roles == ("comment", "code", "docstring", "code")
    assert all("not_code" not in u.text for u in units)  # outputs are not code
    assert any(u.kind == "doc" and u.name == "Analysis" for u in units)


def test_unknown_languages_fall_back_to_paragraphs_with_heuristic_comments() -> None:
    setup = ["; set up"] + [f"param_{i} {i}" for i in range(9)]
    text = "\n".join([*setup, "", "; run", "run param_1 param_2", "", "; report", "report"]) + "\n"
    units = units_of("job.xyz", text)
    # A paragraph of min_block_lines closes its unit; short paragraphs after it are grouped.
    assert [u.lines for u in units] == [tuple(setup), ("; run", "run param_1 param_2", "", "; report", "report")]
    assert units[0].roles == ("comment", *["code"] * 9) and units[0].language == "text"
    assert units[1].roles == ("comment", "code", "blank", "comment", "code")


def test_modified_files_yield_units_of_the_shown_post_image_only_where_lines_were_added() -> None:
    diff = (
        "diff --git a/model.py b/model.py\n--- a/model.py\n+++ b/model.py\n"
        "@@ -10,3 +10,4 @@ class Model:\n"
        " def forward(self, x):\n"
        "-    return x\n"
        "+    y = self.encoder(x)\n"
        "+    return self.head(y)\n"
        " \n"
        "@@ -80,2 +81,2 @@\n"
        " def untouched():\n"
        "     return 1\n"
    )
    image = post_images(parse_diff(diff))[0]
    assert image.added == frozenset({11, 12}) and sorted(image.lines) == [10, 11, 12, 13, 81, 82]
    parsed = parse_diff(diff)
    units = units_from_diff(parsed)
    assert len(units) == 1  # the second hunk adds nothing
    unit = units[0]
    assert (unit.start_line, unit.end_line, unit.kind, unit.name) == (10, 12, "function", "forward")
    assert unit.added_lines == 2 and unit.line_numbers == (10, 11, 12)
    assert unit_hunk_ids(unit, parsed) == ["h1"]


def test_a_long_function_is_cut_into_pieces_of_consecutive_statements() -> None:
    body = "\n".join(f"    value_{i} = compute(value_{i - 1})" for i in range(1, 150))
    units = units_of("long.py", f"import torch\n\n\n@torch.no_grad()\ndef main():\n    value_0 = 0\n{body}\n"
                                "    return value_149\n")
    assert units[0].lines == ("import torch",)
    units = units[1:]
    assert len(units) >= 3 and all(u.kind == "function" and u.name == "main" for u in units)
    assert all(u.end_line - u.start_line + 1 <= 60 for u in units)
    assert units[0].lines[:2] == ("@torch.no_grad()", "def main():")  # the decorator stays with it
    assert units[0].start_line == 4 and units[-1].end_line == 156
    assert [u.start_line for u in units[1:]] == [u.end_line + 1 for u in units[:-1]]


def test_every_added_non_blank_line_lies_in_exactly_one_unit() -> None:
    text = "".join(added_file(p, t) for p, t in [("train.py", PYTHON), ("sweep.sh", SHELL), ("c.yaml", YAML),
                                                    ("k.cu", CUDA), ("README.md", MARKDOWN)])
    diff = parse_diff(text)
    units = units_from_diff(diff)
    for image in post_images(diff):
        covered = [n for u in units if u.file_path == image.path for n in u.line_numbers]
        assert len(covered) == len(set(covered))
        assert {n for n, line in image.lines.items() if line.strip()} <= set(covered)


def test_a_one_megabyte_diff_is_cut_in_a_few_seconds() -> None:
    files = []
    for n in range(160):
        functions = "\n\n".join(
            f"def step_{n}_{i}(batch, lr=0.001):\n    \"\"\"Step {i}.\"\"\"\n    # scale\n"
            + "\n".join(f"    batch = batch * lr + {j}  # update {j}" for j in range(12))
            + "\n    return batch" for i in range(12))
        files.append(added_file(f"pkg/module_{n}.py", f"import torch\n\n\n{functions}\n"))
    text = "".join(files)
    assert len(text) > 1_000_000
    diff = parse_diff(text)
    started = time.process_time()  # CPU time: other work on a shared machine does not count
    units = units_from_diff(diff)
    elapsed = time.process_time() - started
    assert len(units) >= 160 * 12
    assert elapsed < 10.0, f"{elapsed:.1f} s for {len(text)} bytes"


def test_the_gold_lines_of_a_real_repository_diff_lie_inside_units(shared_data: Path) -> None:
    task = shared_data / "expbench" / "gt_code" / "93022" / "0"
    diff = parse_diff((task / "gt.diff").read_text())
    units = units_from_diff(diff)
    images = {image.path: image for image in post_images(diff)}
    checked = 0
    for line in (task / "gold.jsonl").read_text().splitlines():
        record = json.loads(line)
        if not record["valid"]:
            continue
        for span in record["spans"]:
            if not span.get("valid") or span["file"] not in images:
                continue
            lines = images[span["file"]].lines
            for number in range(span["line_start"], span["line_end"] + 1):
                if lines.get(number, "").strip():
                    assert any(u.file_path == span["file"] and number in u.line_numbers for u in units)
                    checked += 1
    assert checked > 50
    assert {u.kind for u in units} >= {"function", "block"}


def test_a_modified_notebook_yields_the_code_its_hunks_add_inside_a_cell_but_not_output_text() -> None:
    lines = _notebook().split("\n")
    code_row = next(i for i, line in enumerate(lines) if "return np.correlate" in line)
    output_row = next(i for i, line in enumerate(lines) if "def not_code" in line)

    def hunk(row: int, replacement: str) -> str:
        context = lines[row + 1:row + 4]
        return (f"@@ -{row + 1},{1 + len(context)} +{row + 1},{1 + len(context)} @@\n-{lines[row]}\n"
                f"+{replacement}\n" + "".join(f" {line}\n" for line in context))

    diff = ("diff --git a/nb.ipynb b/nb.ipynb\n--- a/nb.ipynb\n+++ b/nb.ipynb\n"
            + hunk(output_row, '      "def printed_output():\\n"')
            + hunk(code_row, '    "    return np.correlate(x, x, mode=\\"full\\")\\n",'))
    units = units_from_diff(parse_diff(diff))
    assert [u.lines[0] for u in units] == ['    return np.correlate(x, x, mode="full")']
    assert units[0].start_line == code_row + 1 and units[0].language == "notebook"


def test_a_language_pack_that_downloads_grammars_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from judge.errors import JudgeConfigError
    from judge.submission import code_languages

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.25.0")
    with pytest.raises(JudgeConfigError, match="downloads grammars"):
        code_languages._check_bundled_grammars.__wrapped__()
