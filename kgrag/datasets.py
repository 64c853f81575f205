"""Evaluation datasets: the built-in names and a loader for question files.

A built-in name (`csqa`, `medqa`, `medquad`, `mmlu-law`, `mmlu-law-val`, `hotpotqa`,
`2wiki`, `nq`) resolves to a file of the shared data folder; any other argument is a
path to a JSON Lines file (optionally gzipped) in the format of one of those files,
detected from the keys of its first record. A broken line never stops a load: it is
logged, recorded as a `LoadProblem` with its line number, and skipped.

>>> ds = load_dataset("csqa", data_dir=Path("../shared/data"), limit=2)
>>> len(ds), ds.domain, ds.questions[0].answers
(2, 'commonsense', ['A'])
>>> load_dataset("my_questions.jsonl").problems   # doctest: +SKIP
(LoadProblem(line=7, message='invalid JSON: ...', skipped=True),)
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, cast

from kgrag.errors import DataError
from kgrag.records import RecordContext, RecordFormat, detect_format, format_named
from kgrag.types import Question

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetSpec:
    """A built-in dataset: its file under the data folder, its format and domain."""

    name: str
    path: str  # relative to the data folder
    format: RecordFormat
    domain: str  # the graph KG methods use for it: commonsense, medical, legal, wikipedia


def _spec(name: str, path: str, fmt: str, domain: str) -> DatasetSpec:
    return DatasetSpec(name=name, path=path, format=format_named(fmt), domain=domain)


# The constant table of built-in datasets (read-only).
DATASETS: Mapping[str, DatasetSpec] = MappingProxyType({s.name: s for s in (
    _spec("csqa", "commonsense/csqa_dev300.jsonl", "csqa", "commonsense"),
    _spec("medqa", "medical/medqa_us_dev300.jsonl", "medqa", "medical"),
    _spec("medquad", "medical/medquad_dev300.jsonl", "medquad", "medical"),
    _spec("mmlu-law", "legal/mmlu_professional_law_dev300.jsonl", "mmlu", "legal"),
    _spec("mmlu-law-val", "legal/mmlu_professional_law_val.jsonl", "mmlu", "legal"),
    _spec("hotpotqa", "wikipedia/hotpotqa_dev300.jsonl", "multihop", "wikipedia"),
    _spec("2wiki", "wikipedia/2wiki_dev300.jsonl", "multihop", "wikipedia"),
    _spec("nq", "wikipedia/nq_open_dev300.jsonl", "nq", "wikipedia"),
)})


@dataclass(frozen=True)
class LoadProblem:
    """Something wrong with one line of a question file."""

    line: int  # 1-based
    message: str
    skipped: bool = True  # False: the question was kept (e.g. a duplicate id was renamed)


@dataclass(frozen=True)
class LoadedDataset:
    """The questions of one file and the problems met while reading it.

    >>> ds = LoadedDataset("nq", Path("nq.jsonl"), "nq", "wikipedia", (), ())
    >>> len(ds), ds.skipped
    (0, 0)
    """

    name: str
    path: Path
    format: str
    domain: str
    questions: tuple[Question, ...]
    problems: tuple[LoadProblem, ...]

    @property
    def skipped(self) -> int:
        """How many lines were dropped (broken JSON, invalid records)."""
        return sum(p.skipped for p in self.problems)

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)


def load_dataset(name_or_path: str | Path, data_dir: str | Path | None = None,
                 limit: int | None = None) -> LoadedDataset:
    """Load a built-in dataset by name, or a question file by path.

    `data_dir` is the shared data folder (needed for built-in names; a relative path
    that does not exist from the working directory is also looked up there). `limit`
    keeps the first `limit` valid questions.

    >>> load_dataset("hotpotqa", "../shared/data", limit=1).questions[0].supporting
    ['Big Stone Gap (film)', 'Adriana Trigiani']
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    spec, path = _resolve(name_or_path, Path(data_dir) if data_dir is not None else None)
    if spec is not None:
        return read_questions(path, dataset=spec.name, fmt=spec.format, domain=spec.domain,
                              limit=limit)
    return read_questions(path, limit=limit)


def _resolve(name_or_path: str | Path, data_dir: Path | None) -> tuple[DatasetSpec | None, Path]:
    name = str(name_or_path)
    if name in DATASETS:
        if data_dir is None:
            raise ValueError(f"data_dir is needed to load the built-in dataset {name!r}")
        path = data_dir / DATASETS[name].path
        if not path.is_file():
            raise DataError(f"the {name} questions are not at {path}",
                            hint="set KGRAG_DATA_DIR (or data_dir in kgrag.toml) to the "
                            "folder of the shared datasets")
        return DATASETS[name], path
    path = Path(name_or_path)
    if not path.exists() and data_dir is not None and (data_dir / path).exists():
        path = data_dir / path
    if not path.is_file():
        raise DataError(f"{name!r} is neither a built-in dataset nor a question file",
                        hint=f"name one of {', '.join(DATASETS)}, or give the path of a "
                        "JSON Lines question file")
    if data_dir is not None:
        # A path to a built-in file loads as that dataset (same ids, name and domain).
        for spec in DATASETS.values():
            candidate = data_dir / spec.path
            if candidate.exists() and candidate.resolve() == path.resolve():
                return spec, path
    return None, path


def read_questions(path: str | Path, *, dataset: str | None = None,
                   fmt: RecordFormat | None = None, domain: str | None = None,
                   limit: int | None = None) -> LoadedDataset:
    """Read a JSON Lines question file, skipping (and reporting) the lines it cannot use.

    Without `fmt` the format is detected from the first decodable record; `dataset`
    defaults to the file name without extensions, `domain` to the format's default.

    >>> read_questions("my_nq.jsonl").name   # doctest: +SKIP
    'my_nq'
    """
    path = Path(path)
    dataset = dataset or path.name.split(".")[0]
    problems: list[LoadProblem] = []
    questions: list[Question] = []
    ids: set[str] = set()
    with _open_binary(path) as fh:
        for line_no, raw in enumerate(fh, start=1):
            full = limit is not None and len(questions) >= limit
            if full and fmt is not None:
                break
            record = _decode(raw, line_no, problems)
            if record is None:
                continue
            if fmt is None:
                fmt = detect_format(record)
                if full:  # limit=0: the first record only tells the format
                    break
            elif not fmt.matches(record):
                raise DataError(f"{path}: line {line_no} is not in the {fmt.name} format "
                                f"(keys {sorted(record)})",
                                hint="one file holds one format, the one of its first record")
            ctx = RecordContext(dataset=dataset, domain=domain or fmt.domain, line=line_no)
            try:
                question = fmt.parse(record, ctx)
            except ValueError as e:  # pydantic's ValidationError is a ValueError
                problems.append(LoadProblem(line_no, f"invalid {fmt.name} record: {e}"))
                continue
            questions.append(_unique_id(question, ids, line_no, problems))
    if fmt is None:
        raise DataError(f"{path}: no decodable JSON record ({len(problems)} broken lines)",
                        hint="a question file has one JSON object per line")
    _log_problems(path, problems)
    return LoadedDataset(name=dataset, path=path, format=fmt.name, domain=domain or fmt.domain,
                         questions=tuple(questions), problems=tuple(problems))


def _open_binary(path: Path) -> BinaryIO:
    # Bytes, decoded line by line, so one badly encoded line is one problem, not a crash.
    if path.suffix == ".gz":
        return cast(BinaryIO, gzip.open(path, "rb"))
    return path.open("rb")


def _decode(raw: bytes, line_no: int, problems: list[LoadProblem]) -> dict[str, Any] | None:
    if not raw.strip():
        return None  # blank lines are not records
    try:
        record = json.loads(raw.decode("utf-8").strip())
    except UnicodeDecodeError as e:
        problems.append(LoadProblem(line_no, f"not UTF-8: {e}"))
        return None
    except json.JSONDecodeError as e:
        problems.append(LoadProblem(line_no, f"invalid JSON: {e.msg} at column {e.colno}"))
        return None
    if not isinstance(record, dict):
        problems.append(LoadProblem(line_no, f"expected a JSON object, got "
                                             f"{type(record).__name__}"))
        return None
    return record


def _unique_id(question: Question, ids: set[str], line_no: int,
               problems: list[LoadProblem]) -> Question:
    # Ids key predictions.jsonl, so they must be unique; a repeated file id keeps the first
    # question's id and gives the later one a stable, line-based id.
    if question.id in ids:
        new_id = f"{question.id}@{line_no}"
        problems.append(LoadProblem(line_no, f"duplicate id {question.id!r}, renamed {new_id!r}",
                                    skipped=False))
        question = question.model_copy(update={"id": new_id})
    ids.add(question.id)
    return question


def _log_problems(path: Path, problems: list[LoadProblem]) -> None:
    for p in problems:
        log.warning("%s line %d: %s%s", path, p.line, p.message,
                    " (skipped)" if p.skipped else "")
