"""kg-paths and kg-fused without Neo4j or a model: path features, the fit's own-record
rule, the scorer's fallbacks and the fusion (control flow and arithmetic only)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from kgrag.baselines import LLMOnly
from kgrag.types import Choice, Question
from metakg.kg_paths import KGFused, KGPaths, PathScorer, exclusion_prefix, fit_features, fuse
from metakg.paths import FEATURES, KINDS, Edge, Hood, PathModel, fit_logit, path_features
from metakg.seeds import EntityMatcher
from tests.doubles.scripted import ScriptedModel

N_K = len(KINDS)
FWD, BACK, HOP2 = 0, N_K, 2 * N_K
LOC = KINDS.index("AtLocation")
ISA = KINDS.index("IsA")

Q = Question(id="q1", text="Where would you find a fox?", dataset="csqa_train",
             kind="multiple_choice", domain="d",
             choices=[Choice(label="A", text="forest"), Choice(label="B", text="oven"),
                      Choice(label="C", text="zzz")], answers=["A"])
OWN = exclusion_prefix("d", Q)  # "d:csqa_train:q1"


def hood(leak: bool = True) -> Hood:
    """fox -AtLocation-> forest (ConceptNet), fox -IsA-> animal <-AtLocation- oven… and
    a fact fox -AtLocation-> oven read only from the training question's own record."""
    h = Hood()
    h.degree = {"fox": 6, "forest": 2, "oven": 2, "animal": 10}
    h.edges = {
        "fox": [Edge("forest", "AtLocation", True, 2.0, ("d:conceptnet:fox",)),
                Edge("animal", "IsA", True, 1.0, ()),
                Edge("oven", "AtLocation", True, 0.0, (OWN,))],
        "forest": [Edge("fox", "AtLocation", False, 2.0, ("d:conceptnet:fox",))],
        "oven": [Edge("animal", "AtLocation", False, 0.0, ()),
                 Edge("fox", "AtLocation", False, 0.0, (OWN, OWN + ":1"))],
        "animal": [],
    }
    if not leak:
        h.edges = {k: [e for e in v if OWN not in e.chunks] for k, v in h.edges.items()}
    return h


def test_features_count_typed_paths_by_hop_direction_and_seed_specificity() -> None:
    forest, oven, none = path_features(["fox"], [("forest",), ("oven",), ()], hood())
    w = 1 / math.log2(2 + 6)
    assert forest.features[FWD + LOC] == pytest.approx(math.log1p(w))
    assert forest.features[BACK + LOC] == 0.0
    assert forest.features[FEATURES.index("linked_1hop")] == 1.0
    assert forest.features[FEATURES.index("conceptnet_score")] == pytest.approx(
        math.log1p(math.log1p(2.0)))
    assert "fox -[AtLocation]-> forest" in forest.paths
    # oven: the own-record edge counts when nothing is excluded; the 2-hop path via animal
    assert oven.features[FWD + LOC] > 0
    assert oven.features[HOP2 + LOC] == pytest.approx(
        math.log1p(w / math.log2(2 + 10)))
    assert not none.features.any()  # an option with no entity: all zero


def test_the_fit_leaves_out_facts_from_the_questions_own_record() -> None:
    _, oven, _ = path_features(["fox"], [("forest",), ("oven",), ()], hood(), exclude=OWN)
    assert oven.features[FWD + LOC] == 0.0 and oven.features[BACK + LOC] == 0.0
    assert oven.features[FEATURES.index("linked_1hop")] == 0.0
    assert oven.features[HOP2 + LOC] > 0  # the path via animal has other provenance
    # another question's record does not hide it
    _, oven2, _ = path_features(["fox"], [("forest",), ("oven",), ()], hood(),
                                exclude="d:csqa_train:q2")
    assert oven2.features[FWD + LOC] > 0

    class Hoods:
        def read(self, keys: Sequence[str]) -> Hood:
            return hood()

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    scorer = PathScorer(Hoods(), matcher, PathModel(np.ones(len(FEATURES))))
    xs, ys = fit_features(scorer, [Q], "d")
    assert ys == [0] and xs[0][1, FWD + LOC] == 0.0  # fitted without the leak


def test_scores_zero_for_an_option_without_entities_and_the_argmax_answers() -> None:
    class Hoods:
        def read(self, keys: Sequence[str]) -> Hood:
            return hood(leak=False)

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    weights = np.zeros(len(FEATURES))
    weights[FWD + LOC] = 3.0
    weights[FEATURES.index("has_entity")] = -0.1
    scored = PathScorer(Hoods(), matcher, PathModel(weights)).score(Q)
    assert scored.scores[2] == 0.0 and scored.entities[2] == ()
    pred = KGPaths(PathScorer(Hoods(), matcher, PathModel(weights))).answer(Q)
    assert pred.answer.startswith("A") and pred.error is None
    assert [s.stage for s in pred.trace][-2:] == ["paths", "choose"]


def test_fusion_with_weight_zero_is_the_reader() -> None:
    reader = {"A": 0.2, "B": 0.5, "C": 0.3}
    assert fuse(reader, {"A": 5.0, "B": 0.0, "C": 0.0}, 0.0) == pytest.approx(reader)
    assert max(fuse(reader, {"A": 5.0}, 1.0).items(), key=lambda kv: kv[1])[0] == "A"

    class Hoods:
        def read(self, keys: Sequence[str]) -> Hood:
            return hood(leak=False)

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    weights = np.zeros(len(FEATURES))
    weights[FWD + LOC] = 10.0  # the graph says A strongly
    script = [{"A": math.log(0.2), "B": math.log(0.5), "C": math.log(0.3)}]
    llm = LLMOnly(ScriptedModel(list(script))).answer(Q)
    fused = KGFused(ScriptedModel(list(script)), PathScorer(Hoods(), matcher,
                                                            PathModel(weights)),
                    weight=0.0).answer(Q)
    assert fused.answer == llm.answer and fused.answer.startswith("B")
    last = fused.trace[-1].data
    assert last["letters"] == pytest.approx(last["reader"]) and last["graph"]["A"] > 0
    fused = KGFused(ScriptedModel(list(script)), PathScorer(Hoods(), matcher,
                                                            PathModel(weights)),
                    weight=1.0).answer(Q)
    assert fused.answer.startswith("A")


def test_the_conditional_logit_learns_which_feature_marks_the_answer() -> None:
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for _ in range(200):
        x = rng.normal(size=(5, 3))
        y = int(rng.integers(5))
        x[y, 1] += 2.0
        xs.append(x)
        ys.append(y)
    w = fit_logit(xs, ys, l2=0.1)
    assert w[1] > 1.0 and abs(w[0]) < 0.5
