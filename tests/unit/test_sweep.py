"""`kgrag sweep` with scripted models and the real MetaKGRAG over the in-memory fox graph:
parameter validation, one resumable run per value with that value in its recorded
MetaKGConfig, scoring and the sensitivity plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.plots import plot_sensitivity
from eval.runner import read_run
from eval.sweep import parse_values, read_manifest, run_sweep, score_sweep, value_dir
from kgrag.baselines import LLMOnly
from kgrag.config import Settings
from kgrag.errors import KgragError
from metakg.config import MetaKGConfig
from metakg.methods import MetaKGRAG
from metakg.trace import RefinementView
from tests.conftest import FixedGraphStore
from tests.doubles.memory import MemoryBackend
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_eval_runner import GeneratingLLM
from tests.unit.test_metakg_methods import CONCEPTS_BOTH, KEYS, QTEXT, TRIPLES, TableEmbedder

RIGHT, WRONG = "So the answer is: den.", "So the answer is: forest."
# The fox question three times (the in-memory graph's embedder knows only its texts).
FOX = [{"id": f"fox{i}", "question": QTEXT, "answer": ["den"]} for i in range(3)]


class MetaKGPlatform:
    """The real MetaKGRAG over the in-memory fox graph (`tests.unit.test_metakg_methods`),
    built from the current settings as the real factory builds it: a swept value reaches
    the method, not a renamed stand-in. `scripts` by τ_coverage give each swept value a
    scripted model of its own, so a test can tell which value each run was made with;
    otherwise every method shares `replies`. `llm` is the text baseline beside it."""

    def __init__(self, tmp: Path, replies: list[str] | None = None,
                 scripts: dict[float, list[str]] | None = None) -> None:
        self.settings = Settings(home=tmp / "home", data_dir=tmp,
                                 metakg=MetaKGConfig(n_starts=1))
        self.store = FixedGraphStore()  # the runner fingerprints the graph metakgrag reads
        self.model = ScriptedModel(replies or [])
        self.scripts = scripts
        self.built: list[float] = []
        self.models: list[ScriptedModel] = [self.model]

    def method(self, name: str, domain: str | None) -> MetaKGRAG | LLMOnly:
        cfg = self.settings.metakg
        self.built.append(cfg.tau_coverage)
        model = self.model
        if self.scripts is not None:
            model = ScriptedModel(self.scripts.pop(cfg.tau_coverage, []))
            self.models.append(model)
        if name == "llm":
            return GeneratingLLM(model)
        assert name == "metakgrag"
        return MetaKGRAG(model, MemoryBackend(KEYS, TRIPLES, TableEmbedder(), cfg),
                         domain, cfg)

    def replay_repeats(self) -> ScriptedModel:
        return self.model

    @property
    def unused_replies(self) -> int:
        return sum(m.remaining for m in self.models)


def per_question(*answers: str) -> list[str]:
    """MetaKGRAG's two calls per fox question (n_starts 1): concepts, then the answer."""
    return [r for a in answers for r in (CONCEPTS_BOTH, a)]


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "fox.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in FOX))
    return path


def test_unknown_parameter_lists_the_valid_names() -> None:
    with pytest.raises(KgragError, match="unknown MetaKGRAG parameter 'tau_cov'") as e:
        parse_values("tau_cov", "0.5", MetaKGConfig())
    for name in ("tau_coverage", "n_max", "n_starts", "tau_c", "delta"):
        assert name in e.value.hint
    with pytest.raises(KgragError, match="unknown"):
        parse_values("ablation", "x", MetaKGConfig())


def test_values_are_validated_as_the_field_type_and_range() -> None:
    assert parse_values("n_max", "1, 3", MetaKGConfig()) == [1, 3]
    assert parse_values("delta", "0.1,0.3", MetaKGConfig()) == [0.1, 0.3]
    with pytest.raises(KgragError, match=r"'2.5' is not a valid value of n_max \(int\)"):
        parse_values("n_max", "2,2.5", MetaKGConfig())
    with pytest.raises(KgragError, match="tau_coverage"):
        parse_values("tau_coverage", "0.6,1.5", MetaKGConfig())  # cosine range is [-1, 1]
    with pytest.raises(KgragError, match="repeated"):
        parse_values("n_starts", "3,3", MetaKGConfig())
    with pytest.raises(KgragError, match="no values"):
        parse_values("n_starts", " , ", MetaKGConfig())


def test_sweep_runs_each_value_into_its_own_resumable_run(tmp_path: Path, dataset: Path
                                                          ) -> None:
    out = tmp_path / "sweep"
    p = MetaKGPlatform(tmp_path, scripts={0.4: per_question(WRONG, WRONG, RIGHT),
                                          0.6: per_question(RIGHT, RIGHT, RIGHT)})
    run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.4, 0.6], n=None, out=out, progress=False)
    assert p.built == [0.4, 0.6] and p.scripts == {} and p.unused_replies == 0
    assert p.settings.metakg.tau_coverage == 0.6  # the default is restored afterwards
    for tau in (0.4, 0.6):
        config, lines = read_run(value_dir(out, "tau_coverage", tau))
        assert config.settings["metakg"]["tau_coverage"] == tau
        assert {ln.prediction.method for ln in lines} == {"metakgrag"}
        assert all(any(s.stage == "refine" for s in ln.prediction.trace) for ln in lines)
    assert read_manifest(out).values == [0.4, 0.6]
    points = score_sweep(out)
    metric = points[0].metric
    assert [(pt.value, pt.metric, pt.n) for pt in points] == [(0.4, metric, 3), (0.6, metric, 3)]
    assert points[0].score.mean == pytest.approx(1 / 3) and points[1].score.mean == 1.0
    img = plot_sensitivity("tau_coverage", {"csqa metakgrag": points}, tmp_path / "s.png")
    assert img is not None and img.stat().st_size > 0
    # Rerunning resumes: nothing is asked again (the scripts are empty now), and a new
    # value is added to the same sweep.
    p.scripts = {0.8: per_question(WRONG, WRONG, WRONG)}
    run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.4, 0.6, 0.8], n=None, out=out, progress=False)
    assert p.scripts == {} and p.unused_replies == 0
    assert read_manifest(out).values == [0.4, 0.6, 0.8]
    assert [pt.score.mean for pt in score_sweep(out)][2] == 0.0


def test_value_directory_of_another_metakg_config_is_refused(tmp_path: Path, dataset: Path
                                                             ) -> None:
    out = tmp_path / "sweep"
    p = MetaKGPlatform(tmp_path, scripts={0.4: per_question(RIGHT, RIGHT, RIGHT)})
    run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.4], n=None, out=out, progress=False)
    p.settings.metakg = p.settings.metakg.model_copy(update={"delta": 0.3})
    with pytest.raises(KgragError, match="another MetaKGConfig: delta now 0.3, there 0.2"):
        run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
                  param="tau_coverage", values=[0.4], n=None, out=out, progress=False)


def test_sweep_refuses_other_sweeps_and_methods_without_metakg_config(
        tmp_path: Path, dataset: Path) -> None:
    p = MetaKGPlatform(tmp_path, scripts={})
    with pytest.raises(KgragError, match="does not read MetaKGConfig") as e:
        run_sweep(p, dataset=str(dataset), method="llm",  # type: ignore[arg-type]
                  param="tau_coverage", values=[0.4], n=None, out=tmp_path / "s")
    assert "metakgrag" in e.value.hint
    out = tmp_path / "sweep"
    p = MetaKGPlatform(tmp_path, scripts={0.4: per_question(RIGHT, RIGHT, RIGHT)})
    run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.4], n=None, out=out, progress=False)
    with pytest.raises(KgragError, match="another sweep"):
        run_sweep(p, dataset=str(dataset), method="metakgrag", domain="woods",  # type: ignore[arg-type]
                  param="delta", values=[0.1], n=None, out=out, progress=False)


def test_cli_sweep_rejects_a_bad_parameter_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app

    result = CliRunner().invoke(app, ["sweep", "--dataset", "csqa", "--param", "N_max",
                                      "--values", "1,2", "--out", str(tmp_path / "s")])
    assert isinstance(result.exception, KgragError)
    assert "unknown MetaKGRAG parameter 'N_max'" in str(result.exception)
    assert "n_max" in result.exception.hint and not (tmp_path / "s").exists()


def test_a_swept_tau_coverage_changes_what_metakgrag_does(tmp_path: Path) -> None:
    """The fox graph: the concept "forest" is covered at .2 by the initial path. With
    τ_coverage .1 it counts as covered, so the first cycle acts on relevance only; with
    the paper's .6 it is missing, and the cycle pivots for completeness."""
    data = tmp_path / "fox.jsonl"
    data.write_text(json.dumps({"question": QTEXT, "answer": ["den"]}) + "\n")
    p = MetaKGPlatform(tmp_path, per_question(RIGHT, RIGHT))
    out = tmp_path / "sweep"
    run_sweep(p, dataset=str(data), method="metakgrag", domain="woods",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.1, 0.6], n=None, out=out, progress=False)
    assert p.model.remaining == 0
    first_cycle = {}
    for tau in (0.1, 0.6):
        config, lines = read_run(value_dir(out, "tau_coverage", tau))
        assert config.settings["metakg"]["tau_coverage"] == tau
        (line,) = lines
        assert line.prediction.error is None and line.prediction.answer.endswith("den.")
        refine = next(s for s in line.prediction.trace if s.stage == "refine")
        first_cycle[tau] = RefinementView.model_validate(refine.data).cycles[0]
    low, paper = first_cycle[0.1], first_cycle[0.6]
    assert low.missing == [] and low.issue == "relevance"
    assert paper.missing == ["forest"] and paper.issue == "completeness"
    assert paper.coverage["forest"] == pytest.approx(0.2) == low.coverage["forest"]
