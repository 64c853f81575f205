"""Prompts are template files; this module loads and renders them.

A template file has a `## system` section (optional) and a `## user` section; fields are
`$name` placeholders (`string.Template`), so JSON braces in a prompt need no escaping.
Rendering fails loudly on a missing field.

>>> p = PromptTemplate.load(Path("kgrag/prompts/llm_mcq.txt"))
>>> p.render(question="Where…", choices="A. forest")[-1].role
'user'
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from kgrag.llm.base import Message

_SECTION = re.compile(r"^## (system|user)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: str | None
    user: str

    @classmethod
    def load(cls, path: Path) -> PromptTemplate:
        text = path.read_text(encoding="utf-8")
        parts = _SECTION.split(text)
        sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
        if "user" not in sections:
            raise ValueError(f"prompt {path} has no '## user' section")
        return cls(path.stem, sections.get("system"), sections["user"])

    def render(self, **fields: object) -> list[Message]:
        values = {k: str(v) for k, v in fields.items()}
        messages = []
        if self.system:
            messages.append(Message("system", Template(self.system).substitute(values)))
        messages.append(Message("user", Template(self.user).substitute(values)))
        return messages

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.system}\x00{self.user}".encode()).hexdigest()[:12]


def package_prompt(package_file: str, name: str) -> PromptTemplate:
    """Load `<package dir>/prompts/<name>.txt`, given a module's `__file__`."""
    return PromptTemplate.load(Path(package_file).resolve().parent / "prompts" / f"{name}.txt")
