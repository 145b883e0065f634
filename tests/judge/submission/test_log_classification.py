"""Tests of judge.submission.execution_errors: execution records into EXP-Bench's error taxonomy."""

from __future__ import annotations

import pytest

from judge.models import Execution
from judge.submission.execution_errors import TAIL_BYTES, classify_execution

SCRIPT = "#!/bin/bash\nset -e\npython train.py\n"

TRACEBACK_IMPORT = """\
+ micromamba activate /workspace/venv
+ python /workspace/sim_inference.py --sim_ckpt ckpt.pt
Traceback (most recent call last):
  File "/workspace/sim_inference.py", line 12, in <module>
    import mdtraj
ModuleNotFoundError: No module named 'mdtraj'
"""

TRACEBACK_FILE = """\
Loading checkpoint...
Traceback (most recent call last):
  File "/workspace/scripts/analyze_peptide_sim.py", line 44, in <module>
    traj = md.load(f"{args.pdbdir}/{name}.pdb")
  File "/opt/venv/lib/python3.10/site-packages/mdtraj/core/trajectory.py", line 381, in load
    raise FileNotFoundError(path)
FileNotFoundError: /workspace/data/4AA_sims/AAAA.pdb
"""

TRACEBACK_SHAPE = """\
Epoch 0:   3%|▎         | 12/400 [00:03<01:40,  3.86it/s, loss=2.31]
Traceback (most recent call last):
  File "/workspace/train.py", line 77, in <module>
    trainer.fit(model, train_loader, val_loader)
  File "/workspace/mdgen/model.py", line 210, in forward
    x = x + self.pos_embed
RuntimeError: The size of tensor a (1000) must match the size of tensor b (250) at non-singleton dimension 1
"""


def _run(logs: str, exit_code: int | None = 1, script: str | None = SCRIPT, **kw: bool) -> Execution:
    return Execution(exit_code=exit_code, logs=logs, reproduce_script=script, **kw)


@pytest.mark.parametrize(
    ("logs", "expected_class", "deciding_text"),
    [
        (TRACEBACK_IMPORT, "environment_or_dependency", "ModuleNotFoundError: No module named 'mdtraj'"),
        (TRACEBACK_FILE, "script_or_file_error", "FileNotFoundError: /workspace/data/4AA_sims/AAAA.pdb"),
        (TRACEBACK_SHAPE, "tensor_operation_error", "RuntimeError: The size of tensor a (1000)"),
        (
            "bash: reproduce_exp_bench.sh: No such file or directory\n",
            "missing_setup_script",
            "reproduce_exp",
        ),
        (
            "/bin/bash: /workspace/reproduce_exp_bench.sh: No such file or directory\n",
            "missing_setup_script",
            "reproduce_exp_bench.sh",
        ),
        (
            "python: can't open file '/workspace/train.py': [Errno 2] No such file or directory\n",
            "script_or_file_error",
            "can't open file",
        ),
        (
            "  File \"run.py\", line 3\n    print(x\n         ^\nSyntaxError: '(' was never closed\n",
            "script_or_file_error",
            "SyntaxError",
        ),
        ("NameError: name 'args' is not defined\n", "script_or_file_error", "NameError"),
        (
            "./run.sh: line 4: /workspace/out/log.txt: Permission denied\n",
            "script_or_file_error",
            "Permission",
        ),
        (
            "./run.sh: line 9: syntax error near unexpected token `fi'\n",
            "script_or_file_error",
            "syntax error",
        ),
        ("./run.sh: line 2: mdgen_sim: command not found\n", "script_or_file_error", "mdgen_sim"),
        ("./run.sh: line 2: pip: command not found\n", "environment_or_dependency", "pip: command not found"),
        ("/bin/sh: 1: python3: not found\n", "environment_or_dependency", "python3: not found"),
        (
            "ERROR: Could not find a version that satisfies the requirement torch==9.9\n",
            "environment_or_dependency",
            "Could not find a version",
        ),
        (
            "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n",
            "environment_or_dependency",
            "ResolutionImpossible",
        ),
        (
            "RuntimeError: The NVIDIA driver on your system is too old (found version 10020).\n",
            "environment_or_dependency",
            "NVIDIA driver",
        ),
        (
            "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n",
            "environment_or_dependency",
            "CUDA driver version",
        ),
        (
            "EnvironmentNameNotFound: Could not find conda environment: mdgen\n",
            "environment_or_dependency",
            "EnvironmentNameNotFound",
        ),
        (
            "OSError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n",
            "environment_or_dependency",
            "libcudart",
        ),
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
            "tensor_operation_error",
            "CUDA out of memory",
        ),
        (
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)\n",
            "tensor_operation_error",
            "mat1 and mat2",
        ),
        (
            "RuntimeError: expected scalar type Float but found Double\n",
            "tensor_operation_error",
            "scalar type",
        ),
        (
            "IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)\n",
            "tensor_operation_error",
            "Dimension out of range",
        ),
        (
            "ValueError: operands could not be broadcast together with shapes (3,) (4,)\n",
            "tensor_operation_error",
            "broadcast",
        ),
        (
            "RuntimeError: Error(s) in loading state_dict for SiT:\n\tsize mismatch for pos_embed\n",
            "tensor_operation_error",
            "size mismatch",
        ),
    ],
)
def test_failing_runs_are_classified_by_their_error(
    logs: str, expected_class: str, deciding_text: str
) -> None:
    result = classify_execution(_run(logs))
    assert result.error_class == expected_class
    assert result.exit_code == 1
    assert deciding_text in result.evidence_lines[-1]
    assert all(line in logs for line in result.evidence_lines)
    assert result.taxonomy_label is not None


def test_traceback_frames_are_part_of_the_evidence() -> None:
    result = classify_execution(_run(TRACEBACK_FILE))
    # The frames right above the exception line (at most four), then the exception line.
    assert result.evidence_lines == [
        '  File "/workspace/scripts/analyze_peptide_sim.py", line 44, in <module>',
        '    traj = md.load(f"{args.pdbdir}/{name}.pdb")',
        '  File "/opt/venv/lib/python3.10/site-packages/mdtraj/core/trajectory.py", line 381, in load',
        "    raise FileNotFoundError(path)",
        "FileNotFoundError: /workspace/data/4AA_sims/AAAA.pdb",
    ]


def test_taxonomy_labels_are_expbench_wording() -> None:
    labels = {
        classify_execution(_run(logs)).taxonomy_label
        for logs in (
            TRACEBACK_IMPORT,
            TRACEBACK_FILE,
            TRACEBACK_SHAPE,
            "bash: reproduce_exp_bench.sh: not found",
        )
    }
    assert labels == {
        "environment or dependency configuration",
        "script or file errors",
        "tensor operation errors",
        "missing setup script",
    }


def test_last_fatal_error_wins() -> None:
    early_import_then_file = (
        "Warning: ImportError: optional dependency 'wandb' unavailable, logging disabled\n"
        + "step 1 ok\n" * 50
        + TRACEBACK_FILE
    )
    assert classify_execution(_run(early_import_then_file)).error_class == "script_or_file_error"
    early_file_then_import = "cat: results.txt: No such file or directory\n" + TRACEBACK_IMPORT
    assert classify_execution(_run(early_file_then_import)).error_class == "environment_or_dependency"


def test_success_and_swallowed_crash() -> None:
    clean = "Epoch 10: loss=0.12\nSaved results to /workspace/results.txt\n"
    result = classify_execution(_run(clean, exit_code=0))
    assert (result.error_class, result.taxonomy_label) == ("success", None)
    assert result.evidence_lines == ["Saved results to /workspace/results.txt"]
    # Mentioning an error name without a traceback is not a crash.
    noisy = "Checking for ImportError handling... ok\nDone\n"
    assert classify_execution(_run(noisy, exit_code=0)).error_class == "success"
    # A traceback that the script swallowed (`|| true`, a final echo) is not a success.
    swallowed = TRACEBACK_SHAPE + "Results captured in results.txt\n"
    result = classify_execution(_run(swallowed, exit_code=0))
    assert result.error_class == "tensor_operation_error"
    assert result.exit_code == 0


def test_exit_zero_with_uncategorised_traceback_is_an_unknown_failure() -> None:
    logs = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyboardInterrupt\n'
    result = classify_execution(_run(logs, exit_code=0))
    assert result.error_class == "unknown_failure"
    assert result.evidence_lines[-1] == "KeyboardInterrupt"


def test_timeout() -> None:
    result = classify_execution(_run("Epoch 3/100\nEpoch 4/100\n", exit_code=None, timed_out=True))
    assert (result.error_class, result.taxonomy_label) == ("timeout", None)
    assert result.evidence_lines == ["Epoch 3/100", "Epoch 4/100"]
    # A time-out decides even when the last lines hold an error (the kill caused it).
    assert classify_execution(_run(TRACEBACK_IMPORT, exit_code=137, timed_out=True)).error_class == "timeout"


def test_no_record() -> None:
    assert classify_execution(None).error_class == "no_record"
    assert classify_execution(None).taxonomy_label is None
    assert classify_execution(Execution()).error_class == "no_record"
    assert classify_execution(Execution(logs="  \n")).error_class == "no_record"


def test_missing_setup_script_from_the_record() -> None:
    # An empty script handed in is a missing script, whatever the run printed.
    assert classify_execution(Execution(reproduce_script="")).error_class == "missing_setup_script"
    assert classify_execution(_run("ok\n", exit_code=0, script="  \n")).error_class == "missing_setup_script"
    # A failed run without a script and without any recognisable error.
    no_script = classify_execution(_run("exiting\n", exit_code=2, script=None))
    assert no_script.error_class == "missing_setup_script"
    # With a script, the same record is an unknown failure.
    unknown = classify_execution(_run("exiting\n", exit_code=2))
    assert (unknown.error_class, unknown.taxonomy_label) == ("unknown_failure", None)
    assert unknown.evidence_lines == ["exiting"]
    # An exit code of a missing command, with no message, is a script error.
    assert classify_execution(_run("\n", exit_code=127)).error_class == "script_or_file_error"
    # Success without a script record stays a success: the harness may simply not pass the script on.
    assert classify_execution(_run("done\n", exit_code=0, script=None)).error_class == "success"


def test_unknown_exit_code_with_logs() -> None:
    assert (
        classify_execution(_run(TRACEBACK_IMPORT, exit_code=None)).error_class == "environment_or_dependency"
    )
    assert classify_execution(_run("started\n", exit_code=None, script=None)).error_class == "unknown_failure"


def test_evidence_is_capped_and_verbatim() -> None:
    deep = "Traceback (most recent call last):\n" + "".join(
        f'  File "m{i}.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(20)
    )
    logs = deep + "ValueError: bad value\n"
    result = classify_execution(_run(logs))
    assert len(result.evidence_lines) <= 5
    assert result.evidence_lines[-1] == "ValueError: bad value"
    assert all(line in logs for line in result.evidence_lines)


def test_huge_logs_only_need_their_tail() -> None:
    progress = "".join(f"step {i}: loss={1 / (i + 1):.4f} lr=0.001\n" for i in range(120_000))
    assert len(progress) > 4 * TAIL_BYTES
    logs = TRACEBACK_IMPORT + progress + TRACEBACK_SHAPE
    result = classify_execution(_run(logs))
    assert result.error_class == "tensor_operation_error"
    assert result.evidence_lines[-1].startswith("RuntimeError: The size of tensor a")
    # An error that scrolled out of the scanned tail no longer decides.
    scrolled = classify_execution(_run(TRACEBACK_IMPORT + progress))
    assert scrolled.error_class == "unknown_failure"


def test_crlf_logs() -> None:
    logs = TRACEBACK_IMPORT.replace("\n", "\r\n")
    result = classify_execution(_run(logs))
    assert result.error_class == "environment_or_dependency"
    assert result.evidence_lines[-1] == "ModuleNotFoundError: No module named 'mdtraj'"


def test_crlf_swallowed_traceback_with_exit_zero() -> None:
    logs = (TRACEBACK_FILE + "echo done\n").replace("\n", "\r\n")
    result = classify_execution(_run(logs, exit_code=0))
    assert result.error_class == "script_or_file_error"
    assert result.evidence_lines[-1] == "FileNotFoundError: /workspace/data/4AA_sims/AAAA.pdb"
    assert len(result.evidence_lines) == 5
