"""G-Eval with a scripted judge: the weighting over a scripted next-token distribution,
the position of the score token, the policies, the cache, and the capability errors.
Control flow only: a scripted judge says nothing about the quality of G-Eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eval.geval import DIMENSIONS, GevalItem, GEvalJudge, geval_item, load_judge
from eval.report import markdown
from eval.runner import RunConfig, RunLine
from eval.scoring import score_run
from kgrag.config import Settings
from kgrag.errors import KgragError, ModelError
from kgrag.llm.base import Capabilities, Generation, TokenLogprob
from kgrag.types import Choice, Prediction, Question, Usage
from tests.doubles.scripted import ScriptedModel, ScriptExhausted

LOGPROBS = Capabilities(logprobs=True)
ITEM = GevalItem("What is acne?", "Acne is a skin condition.", "Acne is a skin disease.")


def reply(dist: dict[str, float], prefix: tuple[str, ...] = (), tokens: int = 12) -> Generation:
    """A judge reply: `prefix` tokens, then the argmax of `dist` with `dist` as its top."""
    other = (("Co", math.log(0.9)), ("-", math.log(0.1)))
    steps = [TokenLogprob(t, math.log(0.9), other) for t in prefix]
    top = tuple((t, math.log(p)) for t, p in dist.items())
    best = max(dist, key=lambda t: dist[t])
    steps.append(TokenLogprob(best, math.log(dist[best]), top))
    return Generation("".join(prefix) + best, prompt_tokens=100, completion_tokens=tokens,
                      logprobs=tuple(steps), seconds=0.5)


def test_score_is_the_probability_weighted_sum_over_score_tokens() -> None:
    model = ScriptedModel([reply({"4": 0.5, "5": 0.3, "3": 0.1, "\n": 0.1})],
                          capabilities=LOGPROBS)
    s = GEvalJudge(model, dimensions=("coherence",)).score(ITEM, "coherence")
    assert s.score == pytest.approx((4 * 0.5 + 5 * 0.3 + 3 * 0.1) / 0.9)
    assert s.probabilities == pytest.approx({"3": 1 / 9, "4": 5 / 9, "5": 3 / 9})
    prompt = model.prompts[0][-1].content
    assert prompt.rstrip().endswith("Evaluation Form (scores ONLY):\n\n- Coherence:")
    assert "Evaluation Steps:" in prompt and ITEM.answer in prompt


def test_score_position_is_the_first_score_token_and_variants_merge() -> None:
    # "Coherence: 4": the label tokens carry no score; " 4" and "4" both count for 4.
    g = reply({" 4": 0.4, "4": 0.2, " 2": 0.4}, prefix=("Co", "herence", ":"))
    model = ScriptedModel([g], capabilities=LOGPROBS)
    s = GEvalJudge(model, dimensions=("fluency",)).score(ITEM, "fluency")
    assert s.score == pytest.approx(4 * 0.6 + 2 * 0.4)
    assert s.probabilities == pytest.approx({"2": 0.4, "4": 0.6})


def test_scores_offered_but_not_written_are_read_at_the_first_position_offering_them() -> None:
    # The judge wrote "**Good" but "3" and "4" were among the first token's alternatives.
    first = TokenLogprob("**", math.log(0.5), (("**", math.log(0.5)), ("3", math.log(0.1)),
                                               ("4", math.log(0.3))))
    later = TokenLogprob("Good", math.log(0.6), (("Good", math.log(0.6)), ("5", math.log(0.4))))
    g = Generation("**Good", 10, 2, logprobs=(first, later))
    s = GEvalJudge(ScriptedModel([g], capabilities=LOGPROBS), dimensions=("fluency",)
                   ).score(ITEM, "fluency")
    assert s.score == pytest.approx((3 * 0.1 + 4 * 0.3) / 0.4)
    assert s.probabilities == pytest.approx({"3": 0.25, "4": 0.75})


def test_reply_without_a_score_token_is_unparsed_not_guessed() -> None:
    g = Generation("N/A", 10, 1, logprobs=(TokenLogprob("N/A", -0.1, (("N/A", -0.1),)),))
    s = GEvalJudge(ScriptedModel([g], capabilities=LOGPROBS), dimensions=("fluency",)
                   ).score(ITEM, "fluency")
    assert s.score is None and s.reply == "N/A"


def test_backend_without_logprobs_fails_at_construction_naming_the_fix() -> None:
    with pytest.raises(ModelError, match="G-Eval needs logprobs") as e:
        GEvalJudge(ScriptedModel([]))
    assert "--judge" in e.value.hint and "KGRAG_MODEL__BACKEND=llama" in e.value.hint


def test_backend_that_returns_no_logprobs_or_no_alternatives_is_an_error() -> None:
    bare = Generation("4", 10, 1)
    with pytest.raises(ModelError, match="no token log-probabilities"):
        GEvalJudge(ScriptedModel([bare], capabilities=LOGPROBS)).score(ITEM, "coherence")
    no_top = Generation("4", 10, 1, logprobs=(TokenLogprob("4", -0.1),))
    with pytest.raises(ModelError, match="no top alternatives"):
        GEvalJudge(ScriptedModel([no_top], capabilities=LOGPROBS)).score(ITEM, "coherence")


def test_missing_judge_model_names_how_to_get_it(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, data_dir=tmp_path)
    with pytest.raises(ModelError, match="not fetched") as e:
        load_judge(settings, "qwen2.5-coder-0.5b")
    assert "kgrag models fetch qwen2.5-coder-0.5b" in e.value.hint


def _mcq(answer_text: str) -> tuple[Question, str]:
    q = Question(id="m", text="Where is a fox?", kind="multiple_choice", answers=["B"],
                 choices=[Choice(label="A", text="sea"), Choice(label="B", text="forest")])
    return q, answer_text


def test_what_is_judged() -> None:
    q, _ = _mcq("")
    assert geval_item(q, "B") is None  # a bare option carries no explanation
    item = geval_item(q, "B. Foxes live in forests and dens.")
    assert item is not None and item.reference == "The correct option is B. forest"
    assert "B. forest" in item.question
    short = Question(id="s", text="Who?", kind="short_answer", answers=["Ann"])
    assert geval_item(short, "Ann is the one who did it") is None
    open_q = Question(id="o", text="What is acne?", kind="open_ended", answers=["A skin ..."])
    failed = geval_item(open_q, "partial", error="RuntimeError: boom")
    assert failed is not None and failed.answer == ""  # judged by the empty-answer policy


def _write_run(run: Path, answers: dict[str, list[str]],
               usage: dict[str, list[Usage]] | None = None) -> None:
    run.mkdir()
    config = RunConfig(
        dataset="medquad", dataset_path="x.jsonl", domain="medical", methods=list(answers),
        n=None, model="m", model_backend="llama", model_sha256=None, embedding_model="e",
        seed=42, kgrag_version="0", git_revision="abc", prompts_digest="p", cypher_digest="c",
        code_versions=["0+abc"])
    (run / "config.json").write_text(config.model_dump_json())
    with (run / "predictions.jsonl").open("w") as f:
        for method, texts in answers.items():
            for i, text in enumerate(texts):
                q = Question(id=f"q{i}", text=f"What is condition {i}?", dataset="medquad",
                             kind="open_ended", answers=[f"Condition {i} is a disease."])
                u = (usage or {}).get(method, [])
                pred = Prediction(question_id=q.id, method=method, answer=text,
                                  usage=u[i] if i < len(u) else Usage(llm_calls=1, seconds=1.0))
                f.write(RunLine(question=q, prediction=pred).model_dump_json() + "\n")


def test_score_run_adds_geval_means_cost_and_resumes_from_the_cache(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", ""], "cot": ["It is a disease."]})
    # 2 non-empty answers x 4 dimensions = 8 judge calls; the empty answer costs none.
    # Per dimension, both methods' answers to q0 in turn: llm's, then cot's.
    dists = [{"5": 1.0}, {"3": 0.5, "4": 0.5}] * 4
    model = ScriptedModel([reply(d) for d in dists], capabilities=LOGPROBS, name="judge-x")
    metrics = score_run(run, judge=GEvalJudge(model))
    assert model.remaining == 0
    llm, cot = metrics.methods["llm"].geval, metrics.methods["cot"].geval
    assert llm is not None and cot is not None
    assert set(llm.scores) == set(DIMENSIONS)
    assert llm.scores["coherence"].mean == pytest.approx((5 + 1) / 2)  # empty answer → 1
    assert (llm.answers, llm.empty, cot.answers) == (2, 1, 1)
    assert cot.scores["relevance"].mean == pytest.approx(3.5)
    assert metrics.geval is not None and metrics.geval.judge == "judge-x"
    assert metrics.geval.answers == 2 and metrics.geval.llm_calls_per_answer == 4
    assert metrics.geval.prompt_tokens_per_answer == 400
    assert metrics.geval.seconds_per_answer == pytest.approx(2.0)
    md = markdown(metrics)
    assert "G-Eval Coh. (1–5) [CI]" in md and "| 3.00 [1.00, 5.00] |" in md
    assert "judge `judge-x`" in md and "4.0 LLM calls" in md
    saved = json.loads((run / "metrics.json").read_text())
    assert saved["methods"]["llm"]["geval"]["scores"]["fluency"]["mean"] == pytest.approx(3.0)
    # Rescoring reads every judged pair from geval.jsonl: the empty script is never asked.
    again = score_run(run, judge=GEvalJudge(ScriptedModel([], capabilities=LOGPROBS,
                                                          name="judge-x")))
    assert again.methods["cot"].geval == cot
    # Another judge is another measurement: it is asked again (and here runs out).
    with pytest.raises(ScriptExhausted):
        score_run(run, judge=GEvalJudge(ScriptedModel([], capabilities=LOGPROBS, name="y")))


def test_judge_complete_waits_for_every_row_of_a_question(tmp_path: Path) -> None:
    """Rows answered by two processes grow at different speeds: with `judge_complete` the
    judge reads only questions every row has answered, so a question's answers are judged
    together (sharing its prompt in the KV cache), and the rest on a later pass."""
    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", "Condition 1 is rare."],
                     "cot": ["It is a disease."]})
    model = ScriptedModel([reply({"4": 1.0})] * 8, capabilities=LOGPROBS, name="judge-x")
    metrics = score_run(run, judge=GEvalJudge(model), judge_complete=True)
    assert model.remaining == 0  # q0 only: 2 answers x 4 dimensions
    llm, cot = metrics.methods["llm"].geval, metrics.methods["cot"].geval
    assert llm is not None and cot is not None and (llm.answers, cot.answers) == (1, 1)
    assert metrics.methods["llm"].n == 2  # the row itself is scored whole
    _write_run(tmp_path / "grown", {"llm": ["Condition 0 is a disease.", "Condition 1 is rare."],
                                    "cot": ["It is a disease.", "Rare."]})
    (tmp_path / "grown" / "geval.jsonl").write_text((run / "geval.jsonl").read_text())
    later = ScriptedModel([reply({"2": 1.0})] * 8, capabilities=LOGPROBS, name="judge-x")
    grown = score_run(tmp_path / "grown", judge=GEvalJudge(later), judge_complete=True)
    assert later.remaining == 0  # q1's two answers now, q0's from the kept records
    assert grown.methods["llm"].geval is not None and grown.methods["llm"].geval.answers == 2


def test_judge_stored_reads_only_questions_judged_whole_and_asks_no_judge(
        tmp_path: Path) -> None:
    """A checkpoint while the judge lane is behind (`kgrag score --geval-stored`): G-Eval
    covers the questions every row has answered and whose answers are all judged in every
    dimension; a question judged in part waits, and the judge is never asked."""
    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", "Condition 1 is rare.", "Q2."],
                     "cot": ["It is a disease.", "Rare.", "Q2 too."]})
    # Judge q0 whole, then cut geval.jsonl so q1 keeps only some of its records.
    full = ScriptedModel([reply({"4": 1.0})] * 16, capabilities=LOGPROBS, name="judge-x")
    _write_run(tmp_path / "q01", {"llm": ["Condition 0 is a disease.", "Condition 1 is rare."],
                                  "cot": ["It is a disease.", "Rare."]})
    score_run(tmp_path / "q01", judge=GEvalJudge(full))
    records = (tmp_path / "q01" / "geval.jsonl").read_text().splitlines()
    kept = [r for r in records if not (json.loads(r)["question_id"] == "q1"
                                       and json.loads(r)["dimension"] == "relevance")]
    (run / "geval.jsonl").write_text("\n".join(kept) + "\n")
    silent = ScriptedModel([], capabilities=LOGPROBS, name="judge-x")
    metrics = score_run(run, judge=GEvalJudge(silent), judge_stored=True)
    llm, cot = metrics.methods["llm"].geval, metrics.methods["cot"].geval
    assert llm is not None and cot is not None and (llm.answers, cot.answers) == (1, 1)
    assert llm.scores["relevance"].mean == pytest.approx(4.0)
    assert metrics.methods["llm"].n == 3
    assert (run / "geval.jsonl").read_text().splitlines() == kept  # nothing judged
    # Another judge's records are another measurement: none of them counts as stored.
    other = score_run(run, judge=GEvalJudge(ScriptedModel([], capabilities=LOGPROBS,
                                                          name="judge-y")), judge_stored=True)
    assert other.methods["llm"].geval is None


def test_stored_only_judge_needs_no_model_file_and_reads_its_namesakes_records(
        tmp_path: Path) -> None:
    """`kgrag score --geval-stored` on a machine without the judge GGUF: the judge is the
    configured model's name (what a loaded model would call itself), nothing is loaded, its
    stored scores count, and an answer it would have to judge is refused."""
    settings = Settings(home=tmp_path, data_dir=tmp_path)  # no model fetched here
    with pytest.raises(ModelError, match="not fetched"):
        load_judge(settings, "qwen2.5-coder-0.5b")
    named = load_judge(settings, "qwen2.5-coder-0.5b", stored_only=True)
    assert named.name == "qwen2.5-coder-0.5b" and named.model is None
    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease."]})
    loaded = ScriptedModel([reply({"3": 1.0})] * 4, capabilities=LOGPROBS,
                           name="qwen2.5-coder-0.5b")
    score_run(run, judge=GEvalJudge(loaded))
    stored = score_run(run, judge=named, judge_stored=True).methods["llm"].geval
    assert stored is not None and stored.scores["fluency"].mean == pytest.approx(3.0)
    with pytest.raises(ModelError, match="only reads stored scores"):
        named.score(ITEM, "fluency")
    with pytest.raises(ValueError, match="needs the name"):
        GEvalJudge(None)
    # a loaded model's scores are keyed by its own name, whatever `name` says
    assert GEvalJudge(loaded, name="other").name == "qwen2.5-coder-0.5b"


def test_platform_names_its_chat_model_without_loading_it() -> None:
    """`Platform.chat_name` is the name the loaded model carries (stored scores are keyed
    by it), for the HTTP backend too."""
    from kgrag.platform import Platform

    s = Settings()
    s.model = s.model.model_copy(update={"backend": "openai", "openai_model": "m7",
                                         "openai_base_url": "http://127.0.0.1:9/v1"})
    p = Platform(s)
    assert p.chat_name == p.chat_model.name == "m7@http://127.0.0.1:9/v1"
    s.model = s.model.model_copy(update={"backend": "llama", "chat": "qwen2.5-coder-1.5b"})
    assert Platform(s).chat_name == "qwen2.5-coder-1.5b"


def test_unparsed_replies_are_counted_and_left_out_of_the_mean(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_run(run, {"llm": ["A disease.", "Another disease."]})
    junk = Generation("?", 10, 1, logprobs=(TokenLogprob("?", -0.1, (("?", -0.1),)),))
    # One dimension at a time over both answers: coherence, consistency, fluency, relevance.
    script = [reply({"2": 1.0}), junk] + [reply({"4": 1.0})] * 6
    m = score_run(run, judge=GEvalJudge(ScriptedModel(script, capabilities=LOGPROBS)))
    g = m.methods["llm"].geval
    assert g is not None and g.unparsed == 1
    assert g.scores["coherence"].mean == pytest.approx(2.0)  # only the parsed reply
    assert g.scores["fluency"].mean == pytest.approx(4.0)


def test_the_judge_reads_one_dimension_over_every_answer_before_the_next(
        tmp_path: Path) -> None:
    """Consecutive prompts share a dimension's instructions, which the llama backend keeps in
    its KV cache; the scores stay aligned with the answers in every dimension."""
    run = tmp_path / "run"
    _write_run(run, {"llm": ["A disease.", "Another disease.", "A third one."]})
    script = [reply({str(k): 1.0}) for k in (1, 2, 3) * 4]
    model = ScriptedModel(script, capabilities=LOGPROBS)
    m = score_run(run, judge=GEvalJudge(model))
    forms = [p[-1].content.rstrip().rsplit("- ", 1)[-1] for p in model.prompts]
    assert forms == [f"{d.capitalize()}:" for d in DIMENSIONS for _ in range(3)]
    g = m.methods["llm"].geval
    assert g is not None and g.answers == 3
    for d in DIMENSIONS:  # answer i scored i + 1 in every dimension
        assert g.scores[d].mean == pytest.approx(2.0)
    cached = [json.loads(raw) for raw in (run / "geval.jsonl").read_text().splitlines()]
    assert {(c["question_id"], c["score"]) for c in cached} == {
        (qid, float(i + 1)) for i, qid in enumerate(dict.fromkeys(
            c["question_id"] for c in cached))}


def test_within_a_dimension_every_methods_answer_to_a_question_comes_in_turn(
        tmp_path: Path) -> None:
    """Consecutive prompts then share the question and its reference answer as well as the
    instructions (the llama backend keeps them in its KV cache); each score still lands on
    its own method and question."""
    run = tmp_path / "run"
    _write_run(run, {"llm": ["A disease.", "Another disease."],
                     "cot": ["A condition.", "Another condition."],
                     "rag": ["An illness."]})
    # question by question within each dimension: q0 llm, cot, rag; q1 llm, cot
    per_dim = [("llm", "q0", 1), ("cot", "q0", 2), ("rag", "q0", 3), ("llm", "q1", 4),
               ("cot", "q1", 5)]
    model = ScriptedModel([reply({str(k): 1.0}) for _ in DIMENSIONS for *_, k in per_dim],
                          capabilities=LOGPROBS)
    m = score_run(run, judge=GEvalJudge(model))
    seen = [(p[-1].content.rstrip().rsplit("- ", 1)[-1],
             p[-1].content.split("Answer:", 1)[1].split("Evaluation Form", 1)[0].strip())
            for p in model.prompts]
    answers = {"llm": ["A disease.", "Another disease."],
               "cot": ["A condition.", "Another condition."], "rag": ["An illness."]}
    assert seen == [(f"{d.capitalize()}:", answers[meth][int(q[1])])
                    for d in DIMENSIONS for meth, q, _ in per_dim]
    means = {name: g.scores["fluency"].mean for name, r in m.methods.items()
             if (g := r.geval) is not None}
    assert means == {"llm": pytest.approx(2.5), "cot": pytest.approx(3.5),
                     "rag": pytest.approx(3.0)}
    cached = [json.loads(raw) for raw in (run / "geval.jsonl").read_text().splitlines()]
    assert {(c["method"], c["question_id"], c["score"]) for c in cached} == {
        (meth, q, float(k)) for meth, q, k in per_dim}


def test_progress_counts_answers_judged_and_judgeable_now(tmp_path: Path) -> None:
    """`kgrag progress` (`run_progress`): what a scoring pass with `--geval-complete` would
    judge, read from the files alone: q1 is answered by llm only, so its answer waits."""
    from eval.progress import run_progress

    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", "Condition 1 is rare."],
                     "cot": ["It is a disease."]})
    before = run_progress(run)
    assert before.brief() == "1 3 2"  # cot has 1 answer; 3 unjudged, 2 of them to q0
    assert (before.complete, [m.judgeable for m in before.methods]) == (1, [2, 1])
    model = ScriptedModel([reply({"4": 1.0})] * 8, capabilities=LOGPROBS, name="judge-x")
    score_run(run, judge=GEvalJudge(model), judge_complete=True)
    after = run_progress(run)
    assert after.brief() == "1 1 0"  # q1's answer is left, and cannot be judged yet
    assert [(m.method, m.answered, m.judged) for m in after.methods] == [
        ("llm", 2, 1), ("cot", 1, 1)]
    # Narrowed to some methods (how a resumed lane finds its first step); one without
    # answers counts 0.
    assert run_progress(run, ["llm"]).brief() == "2 1 1"
    assert run_progress(run, ["llm", "kg-ppr"]).least == 0
    # A torn last line (being written) is skipped; a changed answer is not judged yet.
    with (run / "geval.jsonl").open("a") as f:
        f.write('{"method": "llm", "question_id"')
    _write_run(tmp_path / "changed", {"llm": ["Condition 0 is a skin disease.",
                                              "Condition 1 is rare."],
                                      "cot": ["It is a disease."]})
    (tmp_path / "changed" / "geval.jsonl").write_text((run / "geval.jsonl").read_text())
    assert run_progress(run).brief() == "1 1 0"
    assert run_progress(tmp_path / "changed").brief() == "1 2 1"


def test_progress_paces_what_is_left_by_the_seconds_spent(tmp_path: Path) -> None:
    """`kgrag progress --to N`: each row's answers left × the median seconds it spent on
    its latest answers (a replayed call's credited seconds were not spent), and the answers
    left to judge × the judge's median seconds per answer."""
    from eval.progress import RECENT, run_progress

    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", "Rare.", "Common."],
                     "cot": ["It is a disease.", "Rare too."]},
               usage={"llm": [Usage(seconds=s) for s in (10.0, 20.0, 30.0)],
                      "cot": [Usage(seconds=50.0, replayed_seconds=20.0)] * 2})
    p = run_progress(run)
    assert [(m.method, m.seconds) for m in p.methods] == [("llm", 20.0), ("cot", 30.0)]
    left = p.left(4)  # llm: 1 left × 20 s; cot: 2 × 30 s; nothing judged yet to time
    assert (left.answers, left.answer_seconds, left.to_judge, left.judge_seconds) == (
        3, 80.0, 8, None)
    # every call 0.5 s, 4 dimensions: 2 s an answer; q0 and q1 judged, 2 of 8 answers left
    model = ScriptedModel([reply({"4": 1.0})] * 16, capabilities=LOGPROBS, name="judge-x")
    score_run(run, judge=GEvalJudge(model), judge_complete=True)
    judged = run_progress(run)
    assert judged.judge_seconds == pytest.approx(2.0)
    assert (judged.left(4).to_judge, judged.left(4).judge_seconds) == (4, pytest.approx(8.0))
    assert judged.left(2).answers == 0 and judged.left(2).to_judge == 0
    assert "3 answers left, ~0.0 lane-hours" in p.left(4).summary()
    # Only the latest RECENT answers set the pace.
    _write_run(tmp_path / "long", {"llm": ["A."] * (RECENT + 5)},
               usage={"llm": [Usage(seconds=1000.0)] * 5 + [Usage(seconds=2.0)] * RECENT})
    assert run_progress(tmp_path / "long").methods[0].seconds == 2.0
    # A method without answers adds no seconds but is named.
    _write_run(tmp_path / "new", {"llm": ["A."], "cot": []})
    assert run_progress(tmp_path / "new").left(2).unpaced == ["cot"]


def test_progress_command_prints_the_table_or_the_brief_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app

    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease.", ""], "cot": ["It is a disease."]})
    brief = CliRunner().invoke(app, ["progress", str(run), "--brief"])
    assert (brief.exit_code, brief.output) == (0, "1 3 2\n")
    table = CliRunner().invoke(app, ["progress", str(run)])
    assert table.exit_code == 0, table.output
    assert "0 of 2" in table.output and "3 answers not judged yet, 2 of them" in table.output
    typo = CliRunner().invoke(app, ["progress", str(run), "--methods", "llm,cto"])
    assert typo.exit_code == 0 and "no answers in this run from cto" in typo.output
    to = CliRunner().invoke(app, ["progress", str(run), "--to", "3"])
    assert to.exit_code == 0 and "to 3 questions in every row: 3 answers left" in " ".join(
        to.output.split())
    missing = CliRunner().invoke(app, ["progress", str(tmp_path / "nothing")])
    # the CLI's entry point prints a KgragError with its hint
    assert isinstance(missing.exception, KgragError) and "not a run directory" in str(
        missing.exception)
