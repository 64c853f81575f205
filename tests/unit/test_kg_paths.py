"""kg-paths and kg-fused without Neo4j or a model: path features, the fit's own-record
rule, the scorer's fallbacks and the fusion (control flow and arithmetic only)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kgrag.baselines import LLMOnly
from kgrag.errors import KgragError
from kgrag.types import Choice, Question
from metakg.kg_paths import (
    KGFused,
    KGPaths,
    PathScorer,
    exclusion_prefix,
    fit_features,
    fit_records,
    fuse,
)
from metakg.path_features import FEATURES, group_of, option_features, shown_paths
from metakg.paths import (
    Edge,
    Hood,
    Mention,
    PathModel,
    PathRecord,
    fit_logit,
    path_record,
    record_answer,
)
from metakg.paths_fit import PRESENCE, drop_features, held_out_scores, model_scores
from metakg.seeds import EntityMatcher
from tests.doubles.scripted import ScriptedModel

H1B = FEATURES.index("h1_back:AtLocation")  # seed -AtLocation-> option
H2 = FEATURES.index("h2:AtLocation")
SEEDS_1 = FEATURES.index("seeds_1")
IDF_1 = FEATURES.index("idf_1")


def col(name: str) -> int:
    return FEATURES.index(name)


Q = Question(id="q1", text="Where would you find a fox?", dataset="csqa_train",
             kind="multiple_choice", domain="d",
             choices=[Choice(label="A", text="forest"), Choice(label="B", text="oven"),
                      Choice(label="C", text="zzz")], answers=["A"])
OWN = exclusion_prefix("d", Q)  # "d:csqa_train:q1"


def hood(leak: bool = True) -> Hood:
    """fox -AtLocation-> forest (ConceptNet), fox -IsA-> animal <-AtLocation- oven… and
    a fact fox -AtLocation-> oven read only from the training question's own record."""
    h = Hood()
    h.degree = {"fox": 6, "den": 1, "forest": 3, "oven": 2, "animal": 10}
    h.edges = {
        "fox": [Edge("forest", "AtLocation", True, 2.0, ("d:conceptnet:fox",)),
                Edge("animal", "IsA", True, 1.0, ()),
                Edge("oven", "AtLocation", True, 0.0, (OWN,))],
        "den": [Edge("forest", "AtLocation", True, 1.0, ("d:conceptnet:den",))],
        "forest": [Edge("fox", "AtLocation", False, 2.0, ("d:conceptnet:fox",)),
                   Edge("den", "AtLocation", False, 1.0, ("d:conceptnet:den",))],
        "oven": [Edge("animal", "AtLocation", False, 0.0, ()),
                 Edge("fox", "AtLocation", False, 0.0, (OWN, OWN + ":1"))],
        "animal": [],
    }
    # training records: the question's own (answer forest), a sibling's (answer oven)
    h.mentions = {"forest": [Mention(OWN, ("fox",), "forest")],
                  "oven": [Mention("d:csqa_train:q2", ("fox",), "ovens"),
                           Mention("d:wordnet:oven.n.01", ("fox",), None)]}
    if not leak:
        h.edges = {k: [e for e in v if OWN not in e.chunks] for k, v in h.edges.items()}
        h.mentions = {k: [m for m in v if m.chunk != OWN] for k, v in h.mentions.items()}
    return h


def test_features_weigh_each_seed_by_how_few_options_it_reaches() -> None:
    """fox and den reach only forest (IDF log 3 each); oven only at 2 hops."""
    rec = path_record(["fox", "den"], [("forest",), ("oven",), ()], hood(leak=False))
    x = option_features(rec)
    forest, oven, none = x
    assert forest[SEEDS_1] == pytest.approx(math.log1p(2))
    assert forest[IDF_1] == pytest.approx(2 * math.log(3))
    assert oven[SEEDS_1] == 0.0 and oven[IDF_1] == 0.0
    assert forest[H1B] == pytest.approx(math.log1p(2 * (1 + math.log(3))))
    assert forest[col("h1_fwd:AtLocation")] == 0.0
    assert forest[col("idf_1_is_max")] == 1.0 and oven[col("idf_1_gap")] < 0
    # oven: 2 hops through animal (fox -IsA-> animal <-AtLocation- oven)
    assert oven[H2] == pytest.approx(math.log1p(1 / math.log2(2 + 10)))
    assert oven[col("seeds_2_only")] == pytest.approx(math.log1p(1))
    assert not none[:col("has_entity") + 1].any()  # an option with no entity: nothing
    assert "fox -[AtLocation]-> forest" in shown_paths(rec)[0]
    assert group_of("AtLocation") == "AtLocation" and group_of("SymbolOf") == \
        "conceptnet_other" and group_of("spatial") == "spatial" and group_of("?") == "other"


def test_records_that_answer_with_an_option_are_counted_apart() -> None:
    rec = path_record(["fox"], [("forest",), ("oven",), ()], hood(), exclude=OWN,
                      texts=["forest", "oven", "zzz"])
    x = option_features(rec)
    assert x[0, col("record_answer")] == 0.0  # its own record is left out
    assert x[1, col("record_answer")] == pytest.approx(math.log1p(1))  # "ovens" → oven
    assert x[1, col("record_answer_max")] == 1.0 and x[1, col("record_answer_alone")] == 1
    assert x[1, col("chunk_other")] == pytest.approx(math.log1p(1))  # the WordNet gloss
    leak = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood(),
                                       texts=["forest", "oven", "zzz"]))
    assert leak[0, col("record_answer")] > 0  # read when nothing is excluded
    assert record_answer("Question: Where is a fox?\nAnswer: forest") == "forest"
    assert record_answer("fox lives in forest") is None


def test_records_round_trip_through_the_cache_line() -> None:
    rec = path_record(["fox", "den"], [("forest",), ("oven",), ()], hood(),
                      texts=["forest", "oven", "zzz"])
    assert any(o.mentions for o in rec.options)
    again = PathRecord.from_json(json.loads(json.dumps(rec.to_json())))
    assert np.array_equal(option_features(again), option_features(rec))


def fox_scorer() -> PathScorer:
    """A scorer over `hood()` (with the own-record leak) that matches fox, forest, oven."""

    class Hoods:
        def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
            return hood()

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    return PathScorer(Hoods(), matcher, PathModel(np.ones(len(FEATURES))))


def test_the_fit_leaves_out_facts_from_the_questions_own_record(tmp_path: Path) -> None:
    leak = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood()))
    own = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood(),
                                      exclude=OWN))
    assert leak[1, SEEDS_1] > 0  # the own-record fact links fox to oven …
    assert own[1, SEEDS_1] == 0.0 and own[1, H1B] == 0.0  # … and is left out
    assert own[1, H2] > 0  # the path via animal has other provenance
    other = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood(),
                                        exclude="d:csqa_train:q2"))
    assert other[1, SEEDS_1] > 0  # another question's record does not hide it

    scorer = fox_scorer()
    cache = tmp_path / "records.jsonl"
    xs, ys = fit_features(scorer, [Q], "d", cache=cache)
    assert ys == [0] and xs[0][1, SEEDS_1] == 0.0  # fitted without the leak
    line = json.loads(cache.read_text())
    assert line["id"] == "q1" and line["exclude"] == OWN
    assert all(OWN not in json.dumps(h) for o in line["record"]["options"] for h in o["hop1"])
    assert OWN not in json.dumps(line["record"]["options"][0]["mentions"])

    class Refuse:
        def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
            raise AssertionError("a cached question read the graph again")

    rows = fit_records(PathScorer(Refuse(), scorer.matcher, PathModel(np.ones(1))), [Q], "d",
                       cache=cache)
    assert rows[0][2] == 0 and np.array_equal(option_features(rows[0][1]), xs[0])


def test_leaving_out_the_source_hides_every_record_of_the_training_file(
        tmp_path: Path) -> None:
    """--leave-out source: the sibling record (d:csqa_train:q2, answer "ovens") is left
    out too; other sources (WordNet, ConceptNet) stay; the cache keeps both readings apart."""
    x_rec = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood(),
                                        exclude=OWN))
    src = exclusion_prefix("d", Q, "source")
    assert src == "d:csqa_train"
    x_src = option_features(path_record(["fox"], [("forest",), ("oven",), ()], hood(),
                                        exclude=src))
    assert x_rec[1, col("record_answer")] > 0  # the sibling's answer names oven …
    assert x_src[1, col("record_answer")] == 0.0  # … and is hidden with its source
    assert x_src[0, SEEDS_1] > 0  # ConceptNet's fox -AtLocation-> forest stays

    scorer = fox_scorer()
    cache = tmp_path / "records.jsonl"
    a, _ = fit_features(scorer, [Q], "d", cache=cache)
    b, _ = fit_features(scorer, [Q], "d", cache=cache, leave_out="source")
    assert a[0][1, col("record_answer")] > 0 and b[0][1, col("record_answer")] == 0.0
    assert [json.loads(x)["exclude"] for x in cache.read_text().splitlines()] == [OWN, src]


def test_held_out_scores_come_from_weights_fitted_without_the_question() -> None:
    rec = path_record(["fox", "den"], [("forest",), ("oven",), ()], hood(leak=False))
    rows = [(Q, rec, 0)] * 10
    scores = held_out_scores(rows, l2=1.0)
    assert len(scores) == 10 and scores[0]["C"] == 0.0  # no entity: 0
    assert all(s["A"] > s["B"] for s in scores)


def test_model_scores_of_unseen_questions_are_the_weights_times_the_features() -> None:
    """`fit-fused --min-words`: questions fit-paths never saw are scored by the committed
    weights as they are; an option with no entity scores 0."""
    rec = path_record(["fox", "den"], [("forest",), ("oven",), ()], hood(leak=False))
    w = np.zeros(len(FEATURES))
    w[SEEDS_1] = 2.0
    x = option_features(rec)
    (got,) = model_scores([(Q, rec, 0)], PathModel(w))
    assert got == {"A": 2.0 * x[0, SEEDS_1], "B": 2.0 * x[1, SEEDS_1], "C": 0.0}
    assert got["A"] > got["B"] >= 0.0  # fox and den link to forest at 1 hop, not to oven


def test_dropped_presence_features_are_held_at_zero_and_unknown_names_refused() -> None:
    rec = path_record(["fox", "den"], [("forest",), ("oven",), ()], hood(leak=False))
    x = option_features(rec)
    has = col("has_entity")
    assert x[0, has] > 0  # forest names an entity
    (dropped,) = drop_features([x], PRESENCE)
    assert dropped[:, [col(f) for f in PRESENCE]].sum() == 0.0
    assert x[0, has] > 0 and dropped[0, SEEDS_1] == x[0, SEEDS_1]  # a copy; the rest kept
    scores = held_out_scores([(Q, rec, 0)] * 10, l2=1.0, drop=PRESENCE)
    assert all(s["A"] > s["B"] for s in scores)
    with pytest.raises(KgragError, match="has_entiti"):
        drop_features([x], ["has_entiti"])


def test_scores_zero_for_an_option_without_entities_and_the_argmax_answers() -> None:
    class Hoods:
        def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
            return hood(leak=False)

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    weights = np.zeros(len(FEATURES))
    weights[H1B] = 3.0
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
        def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
            return hood(leak=False)

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    weights = np.zeros(len(FEATURES))
    weights[H1B] = 10.0  # the graph says A strongly
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


def test_medmcqa_rows_become_training_questions_with_their_record_ids(tmp_path: Path) -> None:
    from metakg.paths_fit import medmcqa_questions

    f = tmp_path / "medmcqa_dev.jsonl"
    f.write_text(json.dumps({"id": "m1", "question": "Which organ filters blood?",
                             "opa": "liver", "opb": "kidney", "opc": "lung", "opd": "skin",
                             "cop": 2, "exp": None}) + "\n")
    (q,) = medmcqa_questions(f)
    assert q.answers == ["B"] and [c.text for c in q.choices][1] == "kidney"
    assert exclusion_prefix("medical", q) == "medical:medmcqa_dev:m1"
