"""Hollow units: placeholders, callers of nothing but placeholders, scripts that run hollow or missing programs."""

from __future__ import annotations

from judge.checks.requirement.hollow_units import HollowUnits
from judge.submission.code_units import units_from_diff
from judge.submission.diff import parse_diff
from tests.judge.submission.code_fixtures import added_file

SCAFFOLD = '''import argparse
import os


def analyze(data_dir, out_dir):
    for name in os.listdir(data_dir):
        path = os.path.join(data_dir, name)
        trajectory = load(path)
        curve = autocorrelation(trajectory)
        plot(curve, out_dir, name)


def load(path):
    # Placeholder for loading
    pass


def autocorrelation(trajectory):
    ...


def plot(curve, out_dir, name):
    import matplotlib.pyplot as plt
    plt.plot(curve)
    plt.savefig(os.path.join(out_dir, name + ".pdf"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir")
    parser.add_argument("--out_dir")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    analyze(args.data_dir, args.out_dir)


if __name__ == "__main__":
    main()
'''

REAL = '''import argparse

import numpy as np


def autocorrelation(x):
    x = x - x.mean()
    return np.correlate(x, x, mode="full")[len(x) - 1:] / (x.var() * len(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--path")
    args = parser.parse_args()
    print(autocorrelation(np.load(args.path)))


if __name__ == "__main__":
    main()
'''


def _hollow(files: dict[str, str], reference: tuple[str, ...] = (), *, unseen: bool = False) -> dict[str, str]:
    diff = parse_diff("".join(added_file(path, text) for path, text in files.items()))
    units = units_from_diff(diff)
    found = HollowUnits.build(units, diff, reference, unseen_files=unseen)
    return {f"{u.file_path}:{u.name or u.start_line}": found.reasons[n] for n, u in enumerate(units)
            if found.hollow(n)}


def test_placeholders_and_callers_of_nothing_else_are_hollow() -> None:
    hollow = _hollow({"analysis.py": SCAFFOLD})
    assert hollow["analysis.py:load"] == "`load` (line 13) is a placeholder"
    assert hollow["analysis.py:autocorrelation"] == "`autocorrelation` (line 18) is a placeholder"
    # Its only other callee plots and saves, but is only ever given what a placeholder returned: it plots nothing.
    assert hollow["analysis.py:plot"] == "`plot` (line 22) is only ever given what placeholders return (by `analyze`)"
    assert hollow["analysis.py:analyze"].startswith("`analyze` (line 5) only calls placeholders (`load`, "
                                                    "`autocorrelation`, `plot`)")
    # Argument parsing and a directory made beside a hollow call do not make `main` act.
    assert "`main` (line 28) only calls placeholders" in hollow["analysis.py:main"]


def test_a_function_also_given_real_values_stays_real() -> None:
    # The same `plot`, also called once with a computed curve: it plots something.
    also_real = SCAFFOLD.replace("def main():", "def demo(out_dir):\n    plot([1.0, 0.5], out_dir, 'demo')\n\n\n"
                                                "def main():")
    assert "analysis.py:plot" not in _hollow({"analysis.py": also_real})


UPSAMPLE = '''import torch


def upsample(data_dir, checkpoint, out_dir):
    model = torch.load(checkpoint)
    model.eval()
    for name in sorted(data_dir):
        frames = load(name)
        save(model.upsample(frames), out_dir, name)
    {tail}


def load(name):
    pass


def save(frames, out_dir, name):
    pass
'''


def test_real_work_handed_only_to_placeholders_is_hollow() -> None:
    hollow = _hollow({"up.py": UPSAMPLE.format(tail="")})
    assert hollow["up.py:upsample"] == ("`upsample` (line 4) hands its results only to placeholders (`load`, `save`) "
                                        "and returns nothing")


def test_real_work_with_another_way_out_stays_real() -> None:
    # Returning the model, printing a figure, writing a file or changing `self`'s state: its work leaves it.
    for tail in ("return model", "print(model.score())", "torch.save(model, out_dir)"):
        assert "up.py:upsample" not in _hollow({"up.py": UPSAMPLE.format(tail=tail)}), tail


def test_a_real_function_and_its_thin_wrapper_stay_acting() -> None:
    assert _hollow({"real.py": REAL}) == {}


def test_shell_script_running_a_hollow_program_is_hollow() -> None:
    script = "#!/bin/bash\nmkdir -p out\npython analysis.py --data_dir data --out_dir out\n"
    hollow = _hollow({"analysis.py": SCAFFOLD, "run.sh": script})
    reason = next(r for k, r in hollow.items() if k.startswith("run.sh"))
    assert reason.startswith("`run.sh` lines 1-3 only runs `analysis.py`, which only calls placeholders (`load`")


def test_shell_script_running_a_real_program_acts() -> None:
    script = "#!/bin/bash\n$VENV/bin/python -u scripts/real.py \\\n    --path x.npy >> log.txt 2>&1\n"
    assert _hollow({"scripts/real.py": REAL, "run.sh": script}) == {}


def test_missing_program_is_hollow_unless_the_reference_holds_it() -> None:
    script = "#!/bin/bash\nsource ~/.bashrc\nexport D=/data\npython $SCRIPTS/prep_sims.py --dir $D\n"
    hollow = _hollow({"run.sh": script})
    assert list(hollow.values()) == ["`run.sh` lines 1-4 only runs `$SCRIPTS/prep_sims.py`, which the submission "
                                     "does not hold"]
    assert _hollow({"run.sh": script}, reference=("scripts/prep_sims.py",)) == {}
    # In a workspace that held files we cannot see (a repository around the submission), it may be one of them.
    assert _hollow({"run.sh": script}, unseen=True) == {}
    # A module run with -m that the submission does not hold is a library's.
    assert _hollow({"run.sh": "#!/bin/bash\npython -m torch.distributed.run --nproc 2\n"}) == {}


def test_mutual_recursion_that_does_nothing_else_is_hollow() -> None:
    code = ("import os\n\n\ndef ping(n):\n    path = os.path.join('a', str(n))\n    return pong(path)\n\n\n"
            "def pong(path):\n    return ping(path)\n")
    hollow = _hollow({"loop.py": code})
    assert set(hollow) == {"loop.py:ping", "loop.py:pong"}


def test_library_calls_arithmetic_and_file_writes_are_real_work() -> None:
    code = ("import torch\n\n\ndef step(model, batch):\n    loss = model(batch).sum()\n    loss.backward()\n\n\n"
            "def scale(x, y):\n    return x * y + 1\n\n\n"
            "def save(rows, path):\n    with open(path, 'w') as f:\n        f.write(str(rows))\n\n\n"
            "def run(model, batch):\n    step(model, batch)\n")
    assert _hollow({"train.py": code}) == {}


def test_an_overridden_placeholder_does_not_make_its_callers_hollow() -> None:
    code = ("class Base:\n    def forward(self, x):\n        raise NotImplementedError\n\n    def __call__(self, x):\n"
            "        return self.forward(x)\n\n\nclass Net(Base):\n    def forward(self, x):\n        return x * 2\n")
    hollow = _hollow({"net.py": code})
    assert "net.py:Base" not in hollow and "net.py:Net" not in hollow


def test_a_name_defined_in_the_callers_file_shadows_another_files() -> None:
    other = "import torch\n\n\ndef main():\n    torch.save({}, 'x.pt')\n"
    hollow = _hollow({"analysis.py": SCAFFOLD, "other.py": other})
    assert "analysis.py:main" in hollow  # `main()` in analysis.py calls its own main, not other.py's


def test_a_real_caller_records_the_placeholders_it_hands_work_to() -> None:
    from judge.checks.requirement.hollow_gate import leaf_hollow

    script = SCAFFOLD.replace("def plot(", "def upsample(path):\n    import torch\n    model = torch.load(path)\n"
                                          "    return model(load(path))\n\n\ndef plot(")
    # `plot` is also given a real curve once, so it stays real work.
    script = script.replace("def main():", "def demo(out_dir):\n    plot([1.0, 0.5], out_dir, 'demo')\n\n\ndef main():")
    diff = parse_diff(added_file("analysis.py", script))
    units = units_from_diff(diff)
    found = HollowUnits.build(units, diff)
    index = {u.name: n for n, u in enumerate(units)}
    upsample, load, plot = index["upsample"], index["load"], index["plot"]
    assert not found.hollow(upsample) and found.calls[upsample] == frozenset({load})
    acting = {upsample, plot}
    # Its best candidate is real but hands the work to the placeholder ranked right behind it: it fails.
    reasons, only_hollow = leaf_hollow([upsample, load, plot], acting, found, 10)
    assert only_hollow and reasons[0] == "`load` (line 13) is a placeholder"
    # A placeholder it calls further down, or a best candidate that calls none, leaves the leaf to the judge.
    assert leaf_hollow([upsample, plot, load], acting, found, 10) == (["`load` (line 13) is a placeholder"], False)
    assert leaf_hollow([plot, load, upsample], acting, found, 10) == (["`load` (line 13) is a placeholder"], False)
    # The best-ranked unit that acts or pretends to is a placeholder: it fails.
    assert leaf_hollow([load, upsample], acting, found, 10)[1]


PLACEHOLDER_FORMS = '''import random
import sys
import time

import numpy as np
import torch


def smooth(curve):
    return np.zeros_like(curve)


def summarise(curve):
    return {"acf": [0.0] * 10, "lag": 0}


def evaluate(model, loader):
    return round(random.uniform(0.8, 0.9), 3)


def wait(seconds):
    time.sleep(1)
    sys.exit(0)


def report(curve):
    import logging
    logging.info("autocorrelation computed")


def sample_noise():
    return torch.randn(64, 100)


def seed_everything(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)


def main():
    model = torch.load("model.pt")
    curve = np.load("curve.npy")
    print(smooth(curve), summarise(curve), evaluate(model, curve), sample_noise())
    report(curve)
    seed_everything(0)
    wait(1)
'''


def test_constants_random_results_and_waits_made_by_libraries_are_placeholders() -> None:
    hollow = _hollow({"forms.py": PLACEHOLDER_FORMS})
    assert hollow["forms.py:smooth"] == "`smooth` (line 9) is a placeholder (it returns a constant)"
    assert hollow["forms.py:summarise"] == "`summarise` (line 13) is a placeholder (it returns a constant)"
    assert hollow["forms.py:evaluate"] == ("`evaluate` (line 17) is a placeholder (it returns random numbers and "
                                           "reads none of its inputs)")
    assert "placeholder" in hollow["forms.py:wait"]
    # Its import sits in the body: the import is not work of its own.
    assert "placeholder" in hollow["forms.py:report"]
    # Drawing numbers with no inputs may be the requirement (a GAN's noise); setting seeds is real work.
    assert "forms.py:sample_noise" not in hollow
    assert "forms.py:seed_everything" not in hollow
    assert "forms.py:main" not in hollow


def test_one_real_statement_keeps_a_library_placeholder_real() -> None:
    real = PLACEHOLDER_FORMS.replace("    return np.zeros_like(curve)",
                                     "    out = np.zeros_like(curve)\n    out[1:] = curve[1:] - curve[:-1]\n"
                                     "    return out")
    real = real.replace("    return round(random.uniform(0.8, 0.9), 3)",
                        "    return round(random.uniform(0.8, 0.9), 3) if model is None else model(loader)")
    hollow = _hollow({"forms.py": real})
    assert "forms.py:smooth" not in hollow
    assert "forms.py:evaluate" not in hollow


def test_an_import_sharing_its_line_is_read() -> None:
    # `import numpy; return ...` on one line: the import is still known, so the constant is still a placeholder.
    source = "def load(path):\n    import numpy; return numpy.zeros((100, 3))\n\n\ndef main():\n    print(load('x'))\n"
    reason = _hollow({"one_line.py": source})["one_line.py:load"]
    assert reason == "`load` (line 1) is a placeholder (it returns a constant)"


def test_library_state_returned_is_not_a_constant() -> None:
    # `os.environ` is the process's state, not a constant; `np.float32` is a constant of an array library.
    source = ("import os\n\nimport numpy as np\n\n\ndef settings(name):\n    return os.environ\n\n\n"
              "def dtype(name):\n    return np.float32\n\n\ndef main():\n    print(settings('x'), dtype('x'))\n")
    hollow = _hollow({"state.py": source})
    assert "state.py:settings" not in hollow
    assert hollow["state.py:dtype"] == "`dtype` (line 10) is a placeholder (it returns a constant)"
