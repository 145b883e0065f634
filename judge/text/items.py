"""Split free text into gradable items: outcome claims, conclusion sentences, design variables."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from judge.models import VariableRole

_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|vs|etc|et al|approx|cf|fig|eq|resp|no)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET_PREFIX = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|\(?[a-z]\))\s+")
_MARKUP = re.compile(r"[*_`#]+")
_HEADING_ONLY = re.compile(r"^[^:]{0,80}:\s*$")
_MIN_WORDS = 3


def clean_markup(text: str) -> str:
    """Drop markdown emphasis and heading marks, keep the words."""
    return _MARKUP.sub("", text).strip()


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph; abbreviations (e.g., i.e.) and decimals do not split."""
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    parts = _SENTENCE_END.split(protected)
    return [p.replace("\x00", ".").strip() for p in parts if p.strip()]


def split_claims(text: str | None) -> list[str]:
    """Claims of an expected outcome or a conclusion: bullet items and sentences.

    Lead-ins that only introduce a list ("In particular:") are dropped; bullet items
    keep their own sentences together so a hedged bullet stays one claim.
    """
    if not text:
        return []
    claims: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            claims.extend(split_sentences(" ".join(paragraph)))
            paragraph.clear()

    for raw in text.splitlines():
        line = clean_markup(raw)
        if not line:
            flush()
            continue
        if _BULLET_PREFIX.match(raw) or _BULLET_PREFIX.match(line):
            flush()
            claims.append(_BULLET_PREFIX.sub("", line).strip())
        else:
            paragraph.append(line)
    flush()
    return [c for c in claims if len(c.split()) >= _MIN_WORDS and not _HEADING_ONLY.match(c)]


@dataclass(frozen=True)
class DesignItem:
    """One variable as the agent stated it, with the role it gave (None when unstated)."""

    text: str
    name: str | None
    role: VariableRole | None


_ROLE_WORDS: list[tuple[re.Pattern[str], VariableRole]] = [
    (re.compile(r"\bindependent\b|\bmanipulated\b|\bfactors?\b|\btreatments?\b", re.I), "independent"),
    (re.compile(r"\bdependent\b|\boutcome variables?\b|\bresponse variables?\b|\bmetrics?\b|\bmeasured\b", re.I),
     "dependent"),
    (re.compile(r"\bconstant\b|\bcontrol(?:led)? variables?\b|\bfixed\b|\bcontrols\b|\bheld constant\b", re.I),
     "constant"),
]
_ROLE_KEY = re.compile(r"(constant|control|fixed|independent|dependent)", re.I)


def role_in(text: str) -> VariableRole | None:
    """The variable role a heading or label names, if exactly one."""
    found = {role for pattern, role in _ROLE_WORDS if pattern.search(text)}
    return found.pop() if len(found) == 1 else None


def _role_of_key(key: str) -> VariableRole | None:
    match = _ROLE_KEY.search(key)
    if not match:
        return None
    word = match.group(1).lower()
    return "independent" if word == "independent" else "dependent" if word == "dependent" else "constant"


def _heading(line: str) -> tuple[bool, VariableRole | None]:
    """Whether a line is a section heading, and the role it announces (None for other sections)."""
    text = _BULLET_PREFIX.sub("", clean_markup(line)).strip()
    words = len(text.rstrip(":").split())
    mentions_variables = "variable" in text.lower()
    if line.lstrip().startswith("#"):
        return True, role_in(text)
    if words <= 5 and text.endswith(":") and (mentions_variables or role_in(text) is not None):
        return True, role_in(text)
    if words <= 5 and mentions_variables and not text.endswith("."):
        return True, role_in(text)
    return False, None


def _item_from_line(line: str, role: VariableRole | None) -> DesignItem:
    text = _BULLET_PREFIX.sub("", clean_markup(line)).strip()
    name, _, rest = text.partition(":")
    inline_role = role_in(name) if rest and len(name.split()) <= 4 else None
    if inline_role is not None and "variable" in name.lower():
        # "Independent variable: learning rate ..." names the role, not the variable.
        return DesignItem(text=rest.strip(), name=None, role=inline_role)
    return DesignItem(text=text, name=name.strip() if rest else None, role=role)


def parse_design_items(design: str | list[Any] | dict[str, Any] | None) -> list[DesignItem]:
    """The agent's design as items with roles.

    Accepts free text (markdown bullets under role headings, or sentences), a list of
    items (strings or {name, role, description} objects) or a mapping
    role -> {name: description} / [names]. Nested bullets extend their parent item.
    """
    if design is None:
        return []
    if isinstance(design, dict):
        items: list[DesignItem] = []
        for key, block in design.items():
            role = _role_of_key(str(key))
            if isinstance(block, dict):
                items += [DesignItem(f"{n}: {_flatten(v)}", str(n), role) for n, v in block.items()]
            elif isinstance(block, list):
                items += [DesignItem(_flatten(v), None, role) for v in block]
            else:
                items.append(DesignItem(f"{key}: {_flatten(block)}", str(key), role))
        return [i for i in items if i.text.strip()]
    if isinstance(design, list):
        out: list[DesignItem] = []
        for entry in design:
            if isinstance(entry, dict):
                role = _role_of_key(str(entry.get("role", entry.get("type", ""))))
                name = entry.get("name")
                text = _flatten({k: v for k, v in entry.items() if k not in {"role", "type"}})
                out.append(DesignItem(text, str(name) if name else None, role))
            else:
                out.extend(parse_design_items(str(entry)) or [DesignItem(str(entry), None, None)])
        return [i for i in out if i.text.strip()]
    return _parse_design_text(design)


def _parse_design_text(text: str) -> list[DesignItem]:
    items: list[DesignItem] = []
    role: VariableRole | None = None
    parent_indent: int | None = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip())
        is_heading, heading_role = _heading(raw)
        if is_heading:
            role, parent_indent = heading_role, None
            continue
        cleaned = _BULLET_PREFIX.sub("", clean_markup(raw)).strip()
        if not cleaned:
            continue
        if items and parent_indent is not None and indent > parent_indent and _BULLET_PREFIX.match(raw):
            last = items[-1]
            joiner = " " if last.text.endswith(":") else "; "
            items[-1] = DesignItem(f"{last.text}{joiner}{cleaned}", last.name, last.role)
            continue
        if _BULLET_PREFIX.match(raw):
            parent_indent = indent
            items.append(_item_from_line(raw, role))
        else:
            parent_indent = None
            items += [_item_from_line(s, role) for s in split_sentences(cleaned) if len(s.split()) >= 2]
    return items


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_flatten(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_flatten(v) for v in value)
    return "" if value is None else str(value)
