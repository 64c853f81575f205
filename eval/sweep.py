"""Parameter sweeps of MetaKGRAG: accuracy against one `MetaKGConfig` value (the MetaKGRAG
paper's Figs. 3 and 5: τ_coverage, N_max, number of start entities, τ_c, δ).

    kgrag sweep --dataset csqa --domain commonsense --method metakgrag \\
        --param tau_coverage --values 0.4,0.5,0.6,0.7,0.8 --n 50 --out runs/sweep-tau

Layout: `<out>/sweep.json` says what is swept; each value gets an ordinary run directory,
`<out>/tau_coverage=0.6/` (config.json, predictions.jsonl, metrics.json).

Why one run directory per value, not one run with method labels such as
`metakgrag[tau_coverage=0.6]`: a run directory records one resolved configuration
(config.json's `settings`, which include the MetaKGConfig every prediction was made
with), and the runner resumes by (method, question id) under a configuration identity
that does not include MetaKGConfig. Labelled methods in one directory would leave
config.json true for one value only. Per-value directories keep each prediction's
configuration on record, resume independently, and score, report and open in the app
like any other run. Because the runner's identity does not cover MetaKGConfig, the
sweep itself refuses a value directory written with another MetaKGConfig.

Paper names → parameters: τ_coverage `tau_coverage`, N_max `n_max`, number of start
entities `n_starts`, τ_c `tau_c`, δ `delta`.

    values = parse_values("tau_coverage", "0.4,0.6", MetaKGConfig())
    run_sweep(platform, dataset="csqa", method="metakgrag", param="tau_coverage",
              values=values, n=50, out=Path("runs/sweep-tau"))
    [p.score.mean for p in score_sweep(Path("runs/sweep-tau"))]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from eval.runner import RunConfig, identity_diff, run_eval
from eval.scoring import Interval, RunMetrics, score_run
from kgrag.errors import KgragError
from metakg.config import MetaKGConfig

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)
Value = bool | int | float | str | None
NOT_SWEPT = frozenset({"ablation"})  # structured: the ablation methods cover it


class SweepManifest(BaseModel):
    """`<out>/sweep.json`: the swept parameter, its values and what ran."""

    param: str
    method: str
    dataset: str
    domain: str | None
    n: int | None
    values: list[Value]

    def identity(self) -> dict[str, Any]:
        """The fields that must match for another sweep to add its values to this one."""
        return {k: getattr(self, k) for k in ("param", "method", "dataset", "domain", "n")}


class SweepPoint(BaseModel):
    """One value of a sweep and the method's main score there."""

    value: Value
    run: str
    metric: str  # accuracy, EM or ROUGE-L
    score: Interval
    n: int


def sweepable() -> list[str]:
    """The MetaKGConfig fields a sweep can vary."""
    return [name for name in MetaKGConfig.model_fields if name not in NOT_SWEPT]


def parse_values(param: str, raw: str, base: MetaKGConfig) -> list[Value]:
    """Parse a comma-separated list of values, each validated as `param`'s type and range.

    >>> parse_values("n_max", "1,3", MetaKGConfig())
    [1, 3]
    """
    names = sweepable()
    if param not in names:
        raise KgragError(f"unknown MetaKGRAG parameter {param!r}",
                         hint=f"valid names: {', '.join(names)}")
    items = [v.strip() for v in raw.split(",") if v.strip()]
    if not items:
        raise KgragError(f"no values given for {param}", hint="e.g. --values 0.4,0.5,0.6")
    annotation = MetaKGConfig.model_fields[param].annotation
    kind = getattr(annotation, "__name__", str(annotation))
    values: list[Value] = []
    for item in items:
        try:
            cfg = MetaKGConfig.model_validate({**base.model_dump(), param: item})
        except ValidationError as e:
            raise KgragError(f"{item!r} is not a valid value of {param} ({kind}): "
                             f"{e.errors()[0]['msg']}",
                             hint=f"give {kind} values in range; valid parameters: "
                             f"{', '.join(names)}") from None
        values.append(getattr(cfg, param))
    if len(set(map(repr, values))) < len(values):
        raise KgragError(f"repeated values for {param}: {items}")
    return values


def value_dir(out: Path, param: str, value: Value) -> Path:
    return out / f"{param}={value}"


def _metakg_methods() -> set[str]:
    from metakg.methods import FACTORIES

    return set(FACTORIES)


def run_sweep(p: Platform, *, dataset: str, method: str, param: str, values: Sequence[Value],
              n: int | None, out: Path, domain: str | None = None, force: bool = False,
              progress: bool = True) -> SweepManifest:
    """Run `method` once per value into `<out>/<param>=<value>/` (each resumable)."""
    kg = _metakg_methods()
    if method not in kg:
        raise KgragError(f"{method!r} does not read MetaKGConfig, so a sweep would not change it",
                         hint=f"sweep one of: {', '.join(sorted(kg))}")
    manifest = _manifest(out, SweepManifest(param=param, method=method, dataset=dataset,
                                            domain=domain, n=n, values=list(values)), force)
    original = p.settings
    try:
        for value in values:
            cfg = original.metakg.model_copy(update={param: value})
            run_dir = value_dir(out, param, value)
            _check_metakg(run_dir, cfg, force)
            p.settings = original.model_copy(update={"metakg": cfg})
            log.info("sweep %s=%s → %s", param, value, run_dir)
            run_eval(p, dataset, [method], n=n, out=run_dir, domain=domain, force=force,
                     progress=progress)
    finally:
        p.settings = original
    return manifest


def _manifest(out: Path, new: SweepManifest, force: bool) -> SweepManifest:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.json"
    if path.is_file():
        old = SweepManifest.model_validate_json(path.read_text())
        diff = identity_diff(old.identity(), new.identity())
        if diff and not force:
            raise KgragError(f"{out} holds another sweep: {diff}",
                             hint="use a new --out directory (or --force to add to it)")
        new.values = old.values + [v for v in new.values if v not in old.values]
    path.write_text(new.model_dump_json(indent=2))
    return new


def _check_metakg(run_dir: Path, cfg: MetaKGConfig, force: bool) -> None:
    path = run_dir / "config.json"
    if not path.is_file():
        return
    old = RunConfig.model_validate_json(path.read_text()).settings.get("metakg")
    new = json.loads(cfg.model_dump_json())
    diff = identity_diff(old or {}, new)
    if diff and not force:
        raise KgragError(f"{run_dir} was run with another MetaKGConfig: "
                         + ", ".join(f"{k} now {a!r}, there {b!r}" for k, (b, a) in diff.items()),
                         hint="use a new --out directory, or --force to mix them knowingly")


def read_manifest(out: Path) -> SweepManifest:
    path = out / "sweep.json"
    if not path.is_file():
        raise KgragError(f"{out} is not a sweep directory (no sweep.json)",
                         hint="create one with `kgrag sweep --out DIR`")
    return SweepManifest.model_validate_json(path.read_text())


def score_sweep(out: Path, *, rescore: bool = True) -> list[SweepPoint]:
    """Each value's main score with its CI (scoring the runs unless `rescore` is off and
    a metrics.json is there)."""
    from eval.plots import main_metric

    manifest = read_manifest(out)
    points = []
    for value in manifest.values:
        run_dir = value_dir(out, manifest.param, value)
        if not (run_dir / "config.json").is_file():
            continue  # a value not run yet
        metrics = _metrics(run_dir, rescore)
        m = metrics.methods.get(manifest.method)
        mm = main_metric(m) if m else None
        if m is None or mm is None:
            continue
        points.append(SweepPoint(value=value, run=run_dir.name, metric=mm[0], score=mm[1],
                                 n=m.n))
    return points


def _metrics(run_dir: Path, rescore: bool) -> RunMetrics:
    path = run_dir / "metrics.json"
    if not rescore and path.is_file():
        try:
            return RunMetrics.model_validate_json(path.read_text())
        except ValueError:
            log.warning("%s is from another kgrag version; rescoring", path)
    return score_run(run_dir)


def points_table(manifest: SweepManifest, points: Sequence[SweepPoint]) -> list[str]:
    """Markdown rows: value, score [CI], n."""
    metric = points[0].metric if points else "score"
    rows = [f"| {manifest.param} | {metric} % [95% CI] | n |", "|---|---|---|"]
    rows += [f"| {p.value} | {p.score.mean * 100:.1f} [{p.score.low * 100:.1f}, "
             f"{p.score.high * 100:.1f}] | {p.n} |" for p in points]
    return rows

