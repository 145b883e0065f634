"""JSON Schema export of the wire forms: what harnesses send (task, submission) and get back (grade)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from judge.models import Grade, Rubric, Submission, Task

WIRE_MODELS: dict[str, type[BaseModel]] = {"task": Task, "submission": Submission, "grade": Grade, "rubric": Rubric}
SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one wire model (validation mode for inputs, serialization for the grade)."""
    model = WIRE_MODELS[name]
    mode: Literal["validation", "serialization"] = "serialization" if name == "grade" else "validation"
    schema = model.model_json_schema(mode=mode)
    schema["$id"] = f"https://expjudge.dev/schemas/{name}.schema.json"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def write_schemas(folder: Path = SCHEMAS_DIR) -> list[Path]:
    """Write every wire schema as `<name>.schema.json` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in WIRE_MODELS:
        path = folder / f"{name}.schema.json"
        path.write_text(json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
