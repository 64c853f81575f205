# Over 400 lines: a run's identity and the resumable loop that checks it are one contract.
"""The evaluation runner: every method answers the same questions into one run directory.

    <run dir>/config.json        resolved settings, git revision, model sha256, digests of
                                 the prompts and of the Cypher methods run, dataset,
                                 methods, n, and the fingerprint of the domain graph
                                 when a KG method answers (`graph`)
    <run dir>/predictions.jsonl  one line per (method, question), appended as answered
                                 (by one process per method: two `kgrag eval` of other
                                 methods may answer into one run at once)
    <run dir>/metrics.json       written by `kgrag score` (eval.scoring), a separate pass

An interrupted run resumes by (method, question id). A run directory written by another
configuration (dataset, domain, model, the prompts of the methods' packages, Cypher, seed,
the graph KG methods read) is refused (say `--force` to mix knowingly, which is recorded).
Another code version (git revision) may add to a run, since most commits do not touch a
method; every version that wrote into the run is listed in config.json and the report
says so when there is more than one. Dataset lines that could not be read are recorded
with their line numbers and reported too.

    run_eval(platform, "csqa", ["llm", "metakgrag"], n=50, out=Path("runs/csqa-50"))
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field
from tqdm import tqdm

import cypher
from kg_builder.fingerprint import GraphFingerprint, graph_fingerprint
from kgrag import __version__, clock
from kgrag.datasets import load_dataset
from kgrag.errors import KgragError
from kgrag.llm.replay import REPLAY_FILE, ReplayModel
from kgrag.locks import append_line, exclusive, reading, waiting
from kgrag.parsing import settled_rule
from kgrag.types import Prediction, Question

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
ROOT = Path(__file__).resolve().parents[1]


class RunConfig(BaseModel):
    """What produced a run; compared on resume so runs are never mixed silently."""

    dataset: str
    dataset_path: str
    domain: str | None
    methods: list[str]
    n: int | None
    model: str
    model_backend: str
    model_sha256: str | None
    embedding_model: str
    seed: int
    kgrag_version: str
    git_revision: str
    prompts_digest: str  # every method package's prompts; kept for the record
    cypher_digest: str
    # sha256 of the prompts of each package whose methods answered here ("metakg": …);
    # adding a prompt to one package does not lock the runs of another package's methods
    prompt_digests: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    forced_mix: list[str] = Field(default_factory=list)
    code_versions: list[str] = Field(default_factory=list)  # every version that wrote here
    # every llama.cpp build that answered here (`kgrag.llm.llama.build_info`), "unrecorded"
    # first when earlier sessions predate the field; empty for other backends
    llama_builds: list[str] = Field(default_factory=list)
    dataset_problems: list[str] = Field(default_factory=list)  # "line N: why", skipped
    graph: GraphFingerprint | None = None  # the domain graph KG methods read; None: none did
    # SeaKR's δ and where it was calibrated (threshold None: the paper's -6.0); None: no
    # SeaKR method ran here
    seakr_calibration: dict[str, Any] | None = None
    # repeated greedy requests answered once (`kgrag.llm.replay`) in the latest session;
    # None: written before replays existed. Not part of the identity (see that module).
    replay: bool | None = None
    # answer-first replies decoded past their option (`QAMethod.settled`) in the latest
    # session; None: written before the option existed (they were). Not part of the
    # identity: the option read is the same (`kgrag.parsing.answer_settled`).
    explanations: bool | None = None

    @property
    def code_version(self) -> str:
        return f"{self.kgrag_version}+{self.git_revision or 'unknown'}"

    def identity(self) -> dict[str, Any]:
        """The fields that must match for two sessions to write into one run."""
        ident = {k: getattr(self, k) for k in
                 ("dataset_path", "domain", "model", "model_sha256", "cypher_digest", "seed")}
        return ident | {"prompt_digests": dict(sorted(self.prompt_digests.items())),
                        "graph": str(self.graph) if self.graph else None,
                        "seakr_calibration": self.seakr_calibration,
                        "reader": self.reader_identity()}

    def reader_identity(self) -> dict[str, Any] | None:
        """The multiple-choice reader's settings when not the defaults (None: defaults,
        as in runs written before the reader had settings), e.g. a bias correction."""
        from kgrag.reader import ReaderConfig

        reader = {k: v for k, v in (self.settings.get("reader") or {}).items()
                  if k != "prior_dir"}
        default = ReaderConfig().model_dump(mode="json", exclude={"prior_dir"})
        return reader if reader and reader != default else None


class RunLine(BaseModel):
    """One line of predictions.jsonl."""

    question: Question
    prediction: Prediction
    runner_overhead_ms: float = 0.0


def _prompt_key(name: str) -> str | None:
    """A prompt template's name in the digests, `<package>/prompts/<file>`, for a repository
    path `<package>/prompts/<file>` or `<package>/<method>/prompts/<file>` (a method's
    subpackage, e.g. `textrag/seakr/prompts/seakr_step.txt`); None for anything else. The
    digest names a prompt by package and file wherever in the package it lives, so moving
    a template into its method's folder does not change a run's identity. The scorer's own
    prompts (eval/prompts, G-Eval) are left out: they do not change predictions."""
    parts = name.split("/")
    if len(parts) not in (3, 4) or parts[-2] != "prompts" or not parts[-1].endswith(".txt"):
        return None
    return None if parts[0] == "eval" else f"{parts[0]}/prompts/{parts[-1]}"


def _prompt_files(names: Sequence[str]) -> list[tuple[str, str]]:
    """(digest name, repository path) of the prompt templates among `names`, sorted by the
    digest name; two templates of one package with the same file name are an error."""
    keyed = sorted((key, n) for n in names if (key := _prompt_key(n)) is not None)
    clash = [k for (k, _), (k2, _) in zip(keyed, keyed[1:], strict=False) if k == k2]
    if clash:
        raise KgragError(f"two prompt templates share the name {clash[0]!r}",
                         hint="prompt file names must be unique within a package")
    return keyed


def _digest(files: Sequence[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in files:
        h.update(name.encode())
        h.update(data)
    return h.hexdigest()[:16]


def _working_prompts() -> list[tuple[str, bytes]]:
    paths = [*ROOT.glob("*/prompts/*.txt"), *ROOT.glob("*/*/prompts/*.txt")]
    keyed = _prompt_files([str(p.relative_to(ROOT)) for p in paths])
    return [(key, (ROOT / path).read_bytes()) for key, path in keyed]


def prompts_digest(files: Sequence[tuple[str, bytes]] | None = None) -> str:
    """sha256 over every prompt template of every package: recorded in every run, and the
    prompt identity of runs written before per-package digests."""
    return _digest(_working_prompts() if files is None else files)


def package_prompt_digests(packages: Sequence[str],
                           files: Sequence[tuple[str, bytes]] | None = None
                           ) -> dict[str, str]:
    """sha256 of each package's prompt templates, for the packages named."""
    files = _working_prompts() if files is None else files
    return {pkg: _digest([(n, d) for n, d in files if n.split("/")[0] == pkg])
            for pkg in sorted(set(packages))}


def method_packages(methods: Sequence[str]) -> list[str]:
    """The top-level package of each method's factory (`metakgrag` → `metakg`): a method
    reads only its own package's prompts."""
    from kgrag.platform import available_methods

    factories = available_methods()
    return sorted({factories[m].__module__.split(".")[0] for m in methods if m in factories})


def prompts_at_revision(revision: str) -> list[tuple[str, bytes]] | None:
    """The prompt templates as committed at `revision`; None when git cannot tell."""
    if not revision:
        return None
    try:
        listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", revision],  # noqa: S607
                                cwd=ROOT, capture_output=True, text=True, timeout=20,
                                check=True)
        files = []
        for key, name in _prompt_files(listed.stdout.splitlines()):
            shown = subprocess.run(["git", "show", f"{revision}:{name}"],  # noqa: S607
                                   cwd=ROOT, capture_output=True, timeout=20, check=True)
            files.append((key, shown.stdout))
        return files
    except (OSError, subprocess.SubprocessError):
        return None


def build_config(p: Platform, dataset: str, dataset_path: Path, domain: str | None,
                 methods: Sequence[str], n: int | None) -> RunConfig:
    from kg_builder.jobs import _git_revision  # one implementation of "which commit"
    from kgrag.models import REGISTRY
    from kgrag.platform import graph_methods

    s = p.settings
    model = s.model.identity  # through a model server, the server's model
    spec = REGISTRY.get(model)
    graph = None
    if domain is not None and not graph_methods().isdisjoint(methods):
        graph = graph_fingerprint(p.store, domain)  # what the KG methods will read
    return RunConfig(
        seakr_calibration=seakr_calibration(p, dataset_path, methods),
        dataset=dataset, dataset_path=str(dataset_path), domain=domain, methods=list(methods),
        n=n, model=model, model_backend=s.model.backend,
        model_sha256=spec.sha256 if spec else None, embedding_model=s.embedding.model,
        seed=s.model.seed, kgrag_version=__version__, git_revision=_git_revision(),
        prompts_digest=prompts_digest(), cypher_digest=cypher.methods_digest(),
        prompt_digests=package_prompt_digests(method_packages(methods)),
        settings=json.loads(s.model_dump_json(exclude={"neo4j": {"password"}})),
        graph=graph, llama_builds=[_llama_build()] if s.model.backend == "llama" else [],
    )


def _llama_build() -> str:
    from kgrag.llm.llama import build_info

    return build_info()


def seakr_calibration(p: Platform, dataset_path: Path, methods: Sequence[str]
                      ) -> dict[str, Any] | None:
    """The δ the SeaKR methods of this run will use, or None without SeaKR methods.
    Refuses a run on the file the δ was calibrated on."""
    if not _seakr_methods(methods):
        return None
    from textrag.seakr.calibrate import CalibrationLeak, calibration_leak, calibration_record

    record = calibration_record(p.settings.home, p.settings.model.chat, quiet=True)
    leak = calibration_leak(record, dataset_path, p.settings.data_dir)
    if leak:
        raise CalibrationLeak(leak, hint="calibrate on another source (`kgrag calibrate "
                              "seakr --source csqa-train`) or evaluate another dataset")
    return record or {"threshold": None, "source": "none (the paper's δ = -6.0)",
                      "source_file": None}


def _seakr_methods(methods: Sequence[str]) -> list[str]:
    """The SeaKR methods (`seakr` and its ablations) among `methods`, sorted."""
    return sorted(m for m in methods if m.split("-")[0] == "seakr")


def done_pairs(path: Path, redo_errors: bool = False) -> set[tuple[str, str]]:
    """(method, question id) pairs already in predictions.jsonl (a torn last line is ignored).

    With `redo_errors`, a pair whose last line carries an error (a crash, a model that
    failed to load) counts as not done; the new line then wins when the run is read."""
    done: set[tuple[str, str]] = set()
    if not path.is_file():
        return done
    with reading(path) as f:
        for n, line in enumerate(f, 1):
            try:
                pred = json.loads(line)["prediction"]
            except (json.JSONDecodeError, KeyError):
                log.warning("%s:%d is not a complete prediction; it will be redone", path, n)
                continue
            pair = (pred["method"], pred["question_id"])
            if redo_errors and pred.get("error"):
                done.discard(pair)
            else:
                done.add(pair)
    return done


def identity_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The entries of `new` whose value differs from `old`'s, as (old value, new value),
    in `new`'s order; a key `old` lacks counts as None there. The one check of a directory's
    recorded identity against the current one (runs here, sweeps in `eval.sweep`).

    >>> identity_diff({"seed": 1, "domain": "x"}, {"seed": 2, "domain": "x"})
    {'seed': (1, 2)}
    """
    return {k: (old.get(k), v) for k, v in new.items() if old.get(k) != v}


def prepare_run(out: Path, config: RunConfig, force: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "config.json"
    if path.is_file():
        old = RunConfig.model_validate_json(path.read_text())
        adopt_recorded(old, config, out)
        diff = identity_diff(old.identity(), config.identity())
        if diff and not force:
            raise KgragError(
                f"{out} was written by a different configuration: {_describe(diff, old.domain)}",
                hint=_calibration_hint(out, diff, config)
                or "use a new --out directory, or --force to mix them knowingly")
        config.methods = sorted(set(old.methods) | set(config.methods))
        config.n = run_size(old.n, config.n)
        config.forced_mix = old.forced_mix + ([json.dumps(diff)] if diff else [])
        versions = old.code_versions or [old.code_version]
        config.code_versions = _recorded_then_new(versions, [config.code_version])
        if len(config.code_versions) > len(versions):
            log.warning("%s was written by %s; this is %s (the report will say so)", out,
                        ", ".join(versions), config.code_version)
        answered = (out / "predictions.jsonl").is_file() and bool(old.methods)
        builds = old.llama_builds or (["unrecorded"] if answered and config.llama_builds
                                      else [])
        config.llama_builds = _recorded_then_new(builds, config.llama_builds)
    else:
        config.code_versions = [config.code_version]
    path.write_text(config.model_dump_json(indent=2))


def run_size(recorded: int | None, asked: int | None) -> int | None:
    """The `n` a resumed run records: the largest first-N any command asked of it (None:
    the whole dataset), so config.json states the size of the run's tables, not the `--n`
    of the last command (which may add a method on fewer questions).

    >>> run_size(300, 100), run_size(100, 300), run_size(300, None)
    (300, 300, None)
    """
    if recorded is None or asked is None:
        return None
    return max(recorded, asked)


def _recorded_then_new(recorded: list[str], now: list[str]) -> list[str]:
    """What a run recorded, then the entries of `now` it did not have (code versions,
    llama.cpp builds)."""
    return recorded + [v for v in now if v not in recorded]


def adopt_recorded(old: RunConfig, new: RunConfig, out: Path) -> None:
    """Settle the recorded fields that only some methods set (`graph` for KG methods,
    `seakr_calibration` for SeaKR) before two sessions' identities are compared.

    A session without such methods (the field None) keeps the recorded value. A run whose
    config.json predates the field adopts the current value, with a warning when those
    methods already answered there: what they read is unknown.
    """
    from kgrag.platform import graph_methods

    _adopt_prompt_digests(old, new, out)
    fields = (("graph", "graph fingerprint", sorted(graph_methods().intersection(old.methods))),
              ("seakr_calibration", "SeaKR calibration", _seakr_methods(old.methods)))
    for name, what, earlier in fields:
        now = getattr(new, name)
        if now is None:
            setattr(new, name, getattr(old, name))
        elif getattr(old, name) is None:
            if earlier:
                log.warning("%s records no %s (written before kgrag recorded one); "
                            "recording %s from now on: the earlier predictions of %s are "
                            "not covered by it", out, what, now, ", ".join(earlier))
            setattr(old, name, now)


def _adopt_prompt_digests(old: RunConfig, new: RunConfig, out: Path) -> None:
    """Compare prompts only for the packages whose methods answered in both sessions.

    A run written before per-package digests has only the all-packages `prompts_digest`.
    Its per-package digests are recovered from git at the recorded revision when the
    prompts committed there give that recorded digest; otherwise the old check stands
    (every package's prompts must be unchanged).
    """
    if not old.prompt_digests and old.methods:
        files = prompts_at_revision(old.git_revision)
        if files is not None and prompts_digest(files) == old.prompts_digest:
            old.prompt_digests = package_prompt_digests(method_packages(old.methods), files)
        else:
            log.warning("%s predates per-package prompt digests and its revision %r does "
                        "not reproduce its prompts digest: all prompts must be unchanged",
                        out, old.git_revision)
            # compared as "*"; if that matches, today's per-package digests hold for both
            now = package_prompt_digests(method_packages([*old.methods, *new.methods]))
            old.prompt_digests = {"*": old.prompts_digest} | now
            new.prompt_digests = {"*": new.prompts_digest} | now
            return
    merged_old = new.prompt_digests | old.prompt_digests
    new.prompt_digests = old.prompt_digests | new.prompt_digests
    old.prompt_digests = merged_old


def _calibration_hint(out: Path, diff: dict[str, tuple[Any, Any]], config: RunConfig
                      ) -> str | None:
    """How to continue a run whose SeaKR δ differs only because this machine lacks the
    run's calibration file: a committed run keeps that file in `../calibration/`
    (`docs/results/calibration/`), so point to it and to where it must go."""
    if set(diff) != {"seakr_calibration"}:
        return None
    was = diff["seakr_calibration"][0] or {}
    if was.get("threshold") is None:
        return None
    from textrag.seakr.calibrate import calibration_path

    home = Path(config.settings.get("home") or "~/.cache/kgrag").expanduser()
    target = calibration_path(home, config.model)
    for saved in sorted((out.parent / "calibration").glob("seakr-*.json")):
        try:
            data = json.loads(saved.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if data.get("model") == config.model and data.get("threshold") == was["threshold"]:
            return f"the run's δ = {was['threshold']:.4g} is saved in {saved}: copy it to " \
                   f"{target} and run the command again"
    return (f"the run used δ = {was['threshold']:.4g} ({was.get('source')}); restore that "
            f"calibration at {target}, or use a new --out directory")


def _describe(diff: dict[str, tuple[Any, Any]], domain: str | None) -> str:
    rest = {k: v for k, v in diff.items() if k != "graph"}
    parts = [str(rest)] if rest else []
    if "graph" in diff:
        was, now = diff["graph"]
        parts.append(f"the {domain} graph changed since the run was written (recorded: "
                     f"{was}; now: {now})")
    return "; ".join(parts)


@contextlib.contextmanager
def writer_lock(out: Path, methods: Sequence[str]) -> Iterator[None]:
    """One writer per method of a run directory: two `kgrag eval` of other methods may
    answer into one run at once (lines are appended whole, `kgrag.locks.append_line`;
    config.json is updated under `.config.lock`), one of the same method is refused. The
    locks die with their process (no stale locks)."""
    def busy(method: str) -> Callable[[], KgragError]:
        return lambda: KgragError(
            f"another `kgrag eval` is answering with {method} into {out}",
            hint="wait for it to finish (it resumes by question id), leave "
                 f"{method} out of this run's --methods, or use another --out")

    for method in methods:  # a lock file's name: no path, no hidden file
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", method):
            raise KgragError(f"{method!r} is not a method name",
                             hint="see `kgrag methods` for the methods")
    with contextlib.ExitStack() as held:
        for method in sorted(set(methods)):
            held.enter_context(exclusive(out / f".writer.{method}.lock", busy(method)))
        yield


def run_eval(p: Platform, dataset: str, methods: Sequence[str], *, n: int | None,
             out: Path, domain: str | None = None, force: bool = False,
             progress: bool = True, redo_errors: bool = False, replay: bool = True,
             explanations: bool = False) -> Path:
    """Answer the first `n` questions of `dataset` with each method into `out`.

    `replay`: a greedy request one method already sent (the same concepts prompt, the
    same evidence) is answered with the first reply (`kgrag.llm.replay`).
    `explanations`: False stops an answer-first reply once its option is read
    (`QAMethod.settled`); nothing scored reads the explanation."""
    with writer_lock(out, methods):
        return _run_eval(p, dataset, methods, n=n, out=out, domain=domain, force=force,
                         progress=progress, redo_errors=redo_errors, replay=replay,
                         explanations=explanations)


def keep_prior(p: Platform, out: Path, dataset: str, force: bool) -> None:
    """With `bias="prior"` (or `"prompt-prior"`), keep the position prior(s) the run divides
    out beside its predictions (`prior.json`, `prior.answer_choose.json`), so the run can
    be read and repeated without the local cache; a run never mixes two priors unless
    forced."""
    get = getattr(p, "reader_config", None)  # a platform without a reader: no prior
    reader = get() if get else None
    from kgrag.reader import CLOSED_BOOK_PROMPT, PRIOR_BIASES, find_prior

    if reader is None or reader.bias not in PRIOR_BIASES or reader.prior_dir is None:
        return
    _keep_beside(find_prior(reader.prior_dir, p.chat_model.name, dataset),
                 out / "prior.json", "position prior", force)
    if reader.bias == "prompt-prior":  # the KG rows' prompt's own prior too
        from eval.prior import PROMPTS

        for prompt in PROMPTS:
            if prompt != CLOSED_BOOK_PROMPT:
                _keep_beside(find_prior(reader.prior_dir, p.chat_model.name, dataset, prompt),
                             out / f"prior.{prompt}.json", f"position prior ({prompt})", force)


def keep_trust(p: Platform, out: Path, dataset: str, domain: str, methods: Sequence[str],
               force: bool) -> None:
    """With `metakgrag-oa-trust`, keep the calibrated evidence trust it applies beside the
    predictions (`trust.json`); a run never mixes two calibrations unless forced."""
    get = getattr(p, "reader_config", None)
    reader = get() if get else None
    if "metakgrag-oa-trust" not in methods or reader is None or reader.prior_dir is None:
        return
    from metakg.trust import trust_path

    _keep_beside(trust_path(reader.prior_dir, p.chat_model.name, dataset, domain, reader.bias),
                 out / "trust.json", "evidence trust", force)


def _keep_beside(src: Path, kept: Path, what: str, force: bool) -> None:
    """Copy a calibration file into the run directory; refuse a different one unless
    forced. No file yet: the method refuses the first question with the command."""
    if not src.is_file():
        return
    if kept.is_file() and kept.read_text() != src.read_text() and not force:
        raise KgragError(f"{kept.parent} was answered with another {what} ({kept})",
                         hint="use a new --out directory, or --force to mix them knowingly")
    kept.write_text(src.read_text())


def _run_eval(p: Platform, dataset: str, methods: Sequence[str], *, n: int | None,
              out: Path, domain: str | None, force: bool, progress: bool,
              redo_errors: bool = False, replay: bool = True,
              explanations: bool = False) -> Path:
    loaded = load_dataset(dataset, p.settings.data_dir, limit=n)
    if not loaded.questions:
        raise KgragError(f"dataset {dataset!r} has no questions")
    questions = loaded.questions
    domain = domain or questions[0].domain
    replayer = p.replay_repeats() if replay else None
    # An unknown method or an unbuilt domain graph is refused before the run directory
    # gets a config.json that a corrected command would then be refused by.
    built = {name: p.method(name, domain) for name in methods}
    for method in built.values():
        method.prepare(domain)
        method.settled = None if explanations else settled_rule
    config = build_config(p, dataset, Path(loaded.path), domain, methods, n)
    config.dataset_problems = [f"line {pr.line}: {pr.message}" for pr in loaded.problems
                               if pr.skipped]
    config.replay = replay
    config.explanations = explanations
    with waiting(out / ".config.lock"):  # another method's writer may update it too
        prepare_run(out, config, force)
        keep_prior(p, out, questions[0].dataset, force)
        if domain:
            keep_trust(p, out, questions[0].dataset, domain, methods, force)
    if isinstance(replayer, ReplayModel):  # replies outlive the process (resumed runs)
        replayer.keep_in(out / REPLAY_FILE)
    predictions = out / "predictions.jsonl"
    done = done_pairs(predictions, redo_errors)
    for name, method in built.items():
        todo = [q for q in questions if (name, q.id) not in done]
        bar = tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q",
                   desc=name, disable=not progress, dynamic_ncols=True)
        with predictions.open("a", encoding="utf-8") as f:
            for q in todo:
                q = q if q.domain == domain else q.model_copy(update={"domain": domain})
                t0 = clock.now()
                pred = method.answer(q)
                t1 = clock.now()
                append_line(f, RunLine(question=q, prediction=pred).model_dump_json())
                overhead = (clock.now() - t1) * 1000 + max(
                    0.0, (t1 - t0 - pred.usage.seconds) * 1000)
                _record_overhead(out, name, overhead)
                bar.update(1)
        bar.close()
    return out


def _record_overhead(out: Path, method: str, ms: float) -> None:
    # Kept apart from predictions so rewriting a line is never needed.
    with (out / "overhead.jsonl").open("a", encoding="utf-8") as f:
        append_line(f, json.dumps({"method": method, "ms": round(ms, 3)}))


def read_run(run: Path) -> tuple[RunConfig, list[RunLine]]:
    """Config and predictions of a run directory (the last line for a repeated pair wins)."""
    cfg_path = run / "config.json"
    if not cfg_path.is_file():
        raise KgragError(f"{run} is not a run directory (no config.json)",
                         hint="create one with `kgrag eval --out DIR`")
    try:
        config = RunConfig.model_validate_json(cfg_path.read_text())
    except ValueError as e:
        raise KgragError(f"{cfg_path} is not a run configuration this kgrag version reads "
                         f"({str(e).splitlines()[0]})",
                         hint="score it with the kgrag version that wrote it (see its "
                         "git_revision), or re-run the evaluation into a new --out") from e
    lines = {(ln.prediction.method, ln.question.id): ln
             for ln in read_jsonl(run / "predictions.jsonl", RunLine, "prediction")}
    return config, list(lines.values())


def read_jsonl(path: Path, model: type[M], what: str) -> Iterator[M]:
    """The valid lines of an append-only JSONL file, gzip-compressed if its name ends in
    .gz (none if it does not exist); a line cut short by an interrupted write is skipped
    with a warning."""
    if not path.is_file():
        return
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            try:
                yield model.model_validate_json(raw)
            except ValueError:
                log.warning("%s:%d is not a complete %s; skipped", path, n, what)
