"""The multiple-choice reader: letter distributions, rotations, the position prior, the
evidence gate and option-anchored search (scripted models and fake graphs: control flow
and arithmetic only)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest

from eval.prior import (
    CALIBRATION,
    calibration_questions,
    check_calibration_file,
    estimate_prior,
    question_prior,
)
from kgrag.errors import DataError, KgragError, ModelError
from kgrag.llm.base import Message
from kgrag.llm.letters import from_top_logprobs, renormalise
from kgrag.llm.openai_http import OpenAICompatibleModel
from kgrag.reader import (
    PositionPrior,
    ReaderConfig,
    divide_prior,
    read_choice,
    rotated_block,
    shifts_for,
    to_options,
)
from kgrag.types import Choice, Question
from metakg.anchored import HopRow, search_anchored
from metakg.gate import decide
from metakg.graph import Triple
from tests.doubles.scripted import ScriptedModel

Q = Question(id="q", text="Where is milk kept?", dataset="toy", kind="multiple_choice",
             choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge"),
                      Choice(label="C", text="garage")], answers=["B"])


def render(block: str) -> list[Message]:
    return [Message("user", f"Q?\nOptions:\n{block}\nAnswer:")]


def log(d: dict[str, float]) -> dict[str, float]:
    return {k: math.log(v) for k, v in d.items()}


# --- letter distributions --------------------------------------------------------------
def test_letter_probabilities_are_renormalised_over_the_valid_letters_only() -> None:
    # 60% of the next-token mass is on other tokens ("The", "**"): it counts for no option
    probs = renormalise(log({"A": 0.2, "B": 0.1, "C": 0.1}))
    assert probs == pytest.approx({"A": 0.5, "B": 0.25, "C": 0.25})
    c = read_choice(ScriptedModel([log({"A": 0.05, "B": 0.3, "C": 0.05})]), Q, render,
                    ReaderConfig())
    assert c.label == "B" and sum(c.probs.values()) == pytest.approx(1.0)
    assert c.probs["B"] == pytest.approx(0.75)
    with pytest.raises(ModelError, match="no option letter"):
        renormalise({"A": -math.inf, "B": -math.inf})


def test_top_logprobs_count_a_letter_with_and_without_its_space() -> None:
    top = [(" B", math.log(0.4)), ("B", math.log(0.2)), ("The", math.log(0.3)),
           ("A", math.log(0.1))]
    lp = from_top_logprobs(top, ["A", "B", "C"])
    assert math.exp(lp["B"]) == pytest.approx(0.6) and lp["C"] == -math.inf
    assert renormalise(lp) == pytest.approx({"A": 1 / 7, "B": 6 / 7, "C": 0.0})


def test_the_openai_backend_reads_letters_from_the_first_tokens_top_logprobs() -> None:
    sent = []

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        top = [{"token": "B", "logprob": math.log(0.5)}, {"token": " A", "logprob": math.log(0.25)},
               {"token": "C", "logprob": math.log(0.05)}]
        return httpx.Response(200, json={
            "choices": [{"message": {"content": "B"}, "finish_reason": "length",
                         "logprobs": {"content": [{"token": "B", "logprob": math.log(0.5),
                                                   "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 1}})

    client = httpx.Client(base_url="http://server/v1", transport=httpx.MockTransport(reply))
    model = OpenAICompatibleModel("http://server/v1", client=client)
    c = read_choice(model, Q, render, ReaderConfig())
    assert (sent[0]["max_tokens"], sent[0]["logprobs"], sent[0]["top_logprobs"]) == (1, True, 20)
    assert c.label == "B" and c.probs == pytest.approx({"A": 0.3125, "B": 0.625, "C": 0.0625})
    assert model.usage.by_purpose == {"choose": 1}


def test_a_backend_without_letter_scores_is_refused_by_name() -> None:
    from kgrag.baselines import LLMOnly
    from kgrag.llm.base import Capabilities

    model = ScriptedModel([], capabilities=Capabilities(json_schema=True), name="plain")
    with pytest.raises(ModelError, match="option_logprobs, which the 'plain' backend lacks"):
        LLMOnly(model).answer(Q)


# --- rotations -------------------------------------------------------------------------
def test_a_rotation_moves_the_option_texts_and_keeps_the_letters() -> None:
    assert rotated_block(Q, 1) == "A. fridge\nB. garage\nC. oven"
    # letter A shows option B under shift 1: its probability goes back to option B
    assert to_options(Q, 1, {"A": 0.7, "B": 0.2, "C": 0.1}) == {"B": 0.7, "C": 0.2, "A": 0.1}
    assert shifts_for(3, ReaderConfig()) == (0,)
    assert shifts_for(3, ReaderConfig(bias="rotate")) == (0, 1, 2)
    assert shifts_for(4, ReaderConfig(bias="rotate", rotations=2)) == (0, 2)


def test_permutation_averaging_maps_rotated_positions_back_to_options() -> None:
    # a reader that always puts 0.6 on whichever letter shows "fridge", 0.3 on letter A
    def scores(shift: int) -> dict[str, float]:
        fridge_at = "ABC"[(1 - shift) % 3]
        p = {x: 0.05 for x in "ABC"}
        p["A"] += 0.3
        p[fridge_at] += 0.6
        return log(p)

    model = ScriptedModel([scores(0), scores(1), scores(2)])
    c = read_choice(model, Q, render, ReaderConfig(bias="rotate"))
    assert [m[-1].content.split("Options:\n")[1].split("\n")[0] for m in model.prompts] == [
        "A. oven", "A. fridge", "A. garage"]
    assert c.shifts == (0, 1, 2) and c.label == "B"
    # the letter-A bonus is spread evenly over the options once mapped back
    assert c.probs["A"] == pytest.approx(c.probs["C"])
    assert c.probs["B"] > 0.6 and sum(c.probs.values()) == pytest.approx(1.0)
    pure_position = ScriptedModel([log({"A": 0.8, "B": 0.1, "C": 0.1})] * 3)
    flat = read_choice(pure_position, Q, render, ReaderConfig(bias="rotate"))
    assert flat.probs == pytest.approx({"A": 1 / 3, "B": 1 / 3, "C": 1 / 3})


# --- the position prior ----------------------------------------------------------------
def test_the_prior_is_divided_out_and_renormalised() -> None:
    out = divide_prior({"A": 0.5, "B": 0.3, "C": 0.2}, {"A": 0.5, "B": 0.25, "C": 0.25})
    assert out == pytest.approx({"A": 1 / 3.0, "B": 0.4, "C": 0.8 / 3})
    prior = PositionPrior("m", "toy", "x", ("A", "B", "C"), (0.5, 0.25, 0.25), 10)
    c = read_choice(ScriptedModel([log({"A": 0.5, "B": 0.3, "C": 0.2})]), Q, render,
                    ReaderConfig(bias="prior"), prior)
    assert c.label == "B" and len(c.passes) == 1
    with pytest.raises(KgragError, match="needs a position prior"):
        read_choice(ScriptedModel([log({"A": 0.5, "B": 0.3, "C": 0.2})]), Q, render,
                    ReaderConfig(bias="prior"))


def test_the_question_prior_cancels_the_options_and_keeps_the_positions() -> None:
    # P(letter) ∝ prior(letter) · content(option shown): averaging logs over rotations
    # leaves the prior whatever the contents
    prior, content = [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]
    passes = []
    for r in range(3):
        raw = [prior[i] * content[(i + r) % 3] for i in range(3)]
        passes.append({x: v / sum(raw) for x, v in zip("ABC", raw, strict=True)})
    assert question_prior(passes, "ABC") == pytest.approx(prior)


def test_the_prior_is_estimated_only_from_allowed_files(tmp_path: Path) -> None:
    for evaluation in ("commonsense/csqa_dev300.jsonl", "medical/medqa_us_dev300.jsonl",
                       "legal/mmlu_professional_law_dev300.jsonl", "somewhere/x_test.jsonl",
                       "medical/medquad_dev300.jsonl", "anything/else.jsonl"):
        with pytest.raises(DataError, match="may not be used"):
            check_calibration_file(evaluation)
    for allowed in CALIBRATION.values():
        check_calibration_file(allowed)
    with pytest.raises(DataError, match="no calibration file"):
        calibration_questions("hotpotqa", tmp_path, 5)
    train = tmp_path / "commonsense" / "csqa_train.jsonl"
    train.parent.mkdir()
    train.write_text("\n".join(json.dumps({
        "id": f"t{i}", "answerKey": "A", "question": {"stem": f"Train {i}?", "choices": [
            {"label": x, "text": f"{x}{i}"} for x in "ABC"]}}) for i in range(4)))
    (tmp_path / "commonsense" / "csqa_dev300.jsonl").write_text("must not be read")
    source, questions = calibration_questions("csqa", tmp_path, 2)
    assert source == "commonsense/csqa_train.jsonl" and [q.id for q in questions] == ["t0", "t1"]
    biased = log({"A": 0.6, "B": 0.3, "C": 0.1})
    prior = estimate_prior(ScriptedModel([biased] * 6, name="m"), "csqa", tmp_path, 2,
                           progress=False)
    assert prior.source == source and prior.questions == 2
    assert prior.probs == pytest.approx((0.6, 0.3, 0.1))


def test_prompt_prior_divides_each_answer_prompts_own_prior(tmp_path: Path) -> None:
    from kgrag.baselines import LLMOnly
    from kgrag.reader import prior_path

    model = ScriptedModel([], name="m")
    closed = PositionPrior("m", "toy", "x", ("A", "B", "C"), (0.6, 0.2, 0.2), 10)
    kg = PositionPrior("m", "toy", "x", ("A", "B", "C"), (0.2, 0.2, 0.6), 10, "answer_choose")
    assert prior_path(tmp_path, "m", "toy").name == "toy.json"
    assert prior_path(tmp_path, "m", "toy", "answer_choose").name == "toy.answer_choose.json"
    method = LLMOnly(model)
    method.reader = ReaderConfig(bias="prompt-prior", prior_dir=tmp_path)
    with pytest.raises(KgragError, match="under prompt answer_choose") as err:
        method._prior(Q, "answer_choose")
    assert "--prompt answer_choose" in str(err.value.hint)
    closed.save(prior_path(tmp_path, "m", "toy"))
    kg.save(prior_path(tmp_path, "m", "toy", "answer_choose"))
    assert PositionPrior.load(prior_path(tmp_path, "m", "toy")).prompt == "llm_choose"
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"model": "m", "probs"')
    with pytest.raises(KgragError, match="unreadable"):
        PositionPrior.load(damaged)
    assert method._prior(Q, "llm_choose") == closed
    assert method._prior(Q, "answer_choose") == kg
    # `prior`: the `llm` row's prompt's prior for every prompt
    method = LLMOnly(model)
    method.reader = ReaderConfig(bias="prior", prior_dir=tmp_path)
    assert method._prior(Q, "answer_choose") == closed
    # the same pass, read under the two priors: C is the KG prompt's favourite letter
    scores = log({"A": 0.4, "B": 0.2, "C": 0.4})
    assert read_choice(ScriptedModel([scores]), Q, render, ReaderConfig(bias="prompt-prior"),
                       closed).label == "C"
    assert read_choice(ScriptedModel([scores]), Q, render, ReaderConfig(bias="prompt-prior"),
                       kg).label == "A"


def test_the_kg_prompt_prior_is_estimated_under_the_kg_answer_prompt(tmp_path: Path) -> None:
    train = tmp_path / "commonsense" / "csqa_train.jsonl"
    train.parent.mkdir()
    train.write_text(json.dumps({"id": "t0", "answerKey": "A", "question": {
        "stem": "Train?", "choices": [{"label": x, "text": f"{x}0"} for x in "ABC"]}}))
    model = ScriptedModel([log({"A": 0.2, "B": 0.2, "C": 0.6})] * 3, name="m")
    prior = estimate_prior(model, "csqa", tmp_path, 1, progress=False,
                           prompt="answer_choose")
    assert prior.prompt == "answer_choose" and prior.probs == pytest.approx((0.2, 0.2, 0.6))
    # every pass was the KG answer prompt with its no-evidence line, in the dataset's domain
    from metakg.kg_method import NO_EVIDENCE

    assert all(NO_EVIDENCE in m[-1].content or NO_EVIDENCE in m[0].content
               for m in model.prompts) and len(model.prompts) == 3
    with pytest.raises(DataError, match="under prompt 'cot_mcq'"):
        estimate_prior(model, "csqa", tmp_path, 1, progress=False, prompt="cot_mcq")


# --- the evidence gate -----------------------------------------------------------------
@pytest.mark.parametrize(("closed", "evidence", "supported", "has", "use", "rule"), [
    ({"A": 0.6, "B": 0.4}, {"A": 0.6, "B": 0.4}, None, False, False, "no-evidence"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.2, "B": 0.8}, frozenset(), True, False,
     "no-option-supported"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.9, "B": 0.1}, frozenset({"B"}), True, True, "agree"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.2, "B": 0.8}, frozenset({"A"}), True, False,
     "unsupported-switch"),
    ({"A": 0.9, "B": 0.1}, {"A": 0.45, "B": 0.55}, frozenset({"B"}), True, False,
     "less-sure-switch"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.2, "B": 0.8}, frozenset({"B"}), True, True,
     "supported-switch"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.2, "B": 0.8}, None, True, True, "supported-switch"),
    ({"A": 0.6, "B": 0.3, "C": 0.1}, {"A": 0.2, "B": 0.7, "C": 0.1}, frozenset({"A", "B"}),
     True, False, "not-discriminative"),
    ({"A": 0.6, "B": 0.4}, {"A": 0.1, "B": 0.9}, frozenset({"A", "B"}), True, False,
     "not-discriminative"),
    ({"A": 0.6, "B": 0.3, "C": 0.1}, {"A": 0.2, "B": 0.7, "C": 0.1}, frozenset({"B", "C"}),
     True, True, "supported-switch"),
])
def test_the_gate_decides_from_the_distributions_and_the_paths(
        closed: dict[str, float], evidence: dict[str, float], supported: frozenset[str] | None,
        has: bool, use: bool, rule: str) -> None:
    d = decide(closed, evidence, supported, has)
    assert (d.use_evidence, d.rule, d.fired) == (use, rule, not use)


# --- option-anchored search ------------------------------------------------------------
class FakeHops:
    """Edges of a toy graph; counts the hop calls (one round trip each)."""

    def __init__(self, edges: list[tuple[str, str, str]]) -> None:
        self.edges, self.calls = edges, []

    def anchored_hop(self, frontier, targets, visited, cap):  # noqa: ANN001, ANN201
        self.calls.append((list(frontier), list(targets)))
        rows = []
        for h, r, t in self.edges:
            for a, b in ((h, t), (t, h)):
                if a in frontier and b not in visited:
                    rows.append(HopRow(a, Triple(h, r, t), b, b, b in targets, 0.5))
        return rows


def test_paths_connect_question_entities_to_each_option_one_call_per_hop() -> None:
    g = FakeHops([("milk", "stored_in", "cold"), ("cold", "property_of", "fridge"),
                  ("milk", "heated_in", "oven"), ("cold", "felt_in", "kitchen"),
                  ("garage", "holds", "car")])
    s = search_anchored(g, ["milk"], {"A": ["oven"], "B": ["fridge"], "C": ["garage"]})
    assert len(g.calls) == s.round_trips == 3  # C is never reached: hops 1, 2 and 3
    assert [h.reached for h in s.hops] == [("A",), ("B",), ()]
    (b,) = s.paths["B"]
    assert b.entities == ("milk", "cold", "fridge") and b.hops == 2
    assert s.supported == {"A", "B"} and s.completeness == pytest.approx(2 / 3)
    # hop 2 looks only for the options still missing
    assert g.calls[1][1] == ["fridge", "garage"]


def test_the_search_stops_once_every_option_is_reached_and_is_bounded() -> None:
    g = FakeHops([("milk", "r", "oven"), ("milk", "r", "fridge")])
    s = search_anchored(g, ["milk"], {"A": ["oven"], "B": ["fridge"]})
    assert s.round_trips == 1 and s.completeness == 1.0
    with pytest.raises(ValueError, match="1–3 hops"):
        search_anchored(g, ["milk"], {"A": ["oven"]}, max_hops=4)
    # an option entity the question already names gives no path (and no round trip)
    g2 = FakeHops([("milk", "r", "oven")])
    assert search_anchored(g2, ["milk"], {"A": ["milk"]}).round_trips == 0
