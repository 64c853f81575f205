"""Deterministic question → entity matching (metakg.seeds) and the hop distances and
shares of `kgrag graph coverage` (metakg.coverage) over an in-memory graph."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kgrag.types import Choice, Passage, Question
from metakg.coverage import (
    NO_ENTITY,
    UNREACHED,
    Ball,
    QuestionCoverage,
    cover_question,
    distances,
    summarise,
)
from metakg.seeds import (
    EntityMatcher,
    Phrase,
    _spans,
    maximal,
    phrases,
    title_keys,
    tokens,
)


def matcher(keys: set[str], redirect: dict[str, str] | None = None) -> EntityMatcher:
    return EntityMatcher(lambda ks: {k for k in ks if k in keys}, redirect)


# --- matching ---------------------------------------------------------------------------
def test_phrases_skip_function_words_at_the_edges() -> None:
    keys = [p.key for p in phrases("Where would you find the heart attacks?")]
    assert "heart attack" in keys and "find the heart attack" in keys
    assert "the heart" not in keys and "where" not in keys and "you find" not in keys
    assert all(len(p.text.split()) <= 4 for p in phrases("a b c d e f g h i j"))


def test_tokens_keep_inner_hyphens_and_drop_possessives() -> None:
    assert tokens("A 9-year-old boy's cat, (ok).") == ["A", "9-year-old", "boy", "cat", "ok"]
    assert tokens("O'Neill’s dogs'") == ["O'Neill", "dogs"]


def fake_tagger(tags: dict[str, tuple[str, str]]):  # type: ignore[no-untyped-def]
    """A tagger that knows some words' (part of speech, lemma); others are VERB."""
    def tag(text: str) -> list[tuple[int, str, str]]:
        return [(start, *tags.get(w, ("VERB", w))) for start, w in _spans(text)]
    return tag


def test_with_a_tagger_only_noun_phrases_are_candidates_and_lemmas_help() -> None:
    tagger = fake_tagger({"good": ("ADJ", "good"), "place": ("NOUN", "place"),
                          "mice": ("NOUN", "mouse"), "farmland": ("NOUN", "farmland")})
    keys = {p.key for p in phrases("looking for a good place with mice", tagger=tagger)}
    assert {"good place", "place", "mice", "mouse", "place with mouse"} <= keys
    assert not [k for k in keys if k.startswith(("looking", "look"))]
    m = EntityMatcher(lambda ks: {k for k in ks if k in {"look", "mouse", "good place"}},
                      tagger=tagger)
    assert m.match("looking for a good place with mice").keys == ("good place", "mouse")
    assert m.match_option("look").keys == ("look",)  # a whole option is never filtered


WIDE_TAGS = {"chopping": ("VERB", "chop"), "onions": ("NOUN", "onion"),
             "find": ("VERB", "find"), "happiest": ("ADJ", "happy"), "likely": ("ADJ", "likely"),
             "taking": ("VERB", "take"), "tests": ("NOUN", "test"), "locked": ("VERB", "lock"),
             "up": ("ADP", "up"), "sleeping": ("VERB", "sleep"), "caught": ("VERB", "catch"),
             "the": ("DET", "the"), "fox": ("NOUN", "fox"), "is": ("AUX", "be")}


def test_wide_rules_add_verbs_adjectives_and_verb_phrases_by_lemma() -> None:
    tagger = fake_tagger(WIDE_TAGS)
    narrow = {p.key for p in phrases("find the fox chopping onions", tagger=tagger)}
    assert "chop" not in narrow and "chopping" not in narrow
    wide = {p.key for p in phrases("find the fox chopping onions happiest likely",
                                   tagger=tagger, wide=True)}
    assert {"chopping", "chop", "happiest", "happy", "chop onion", "find the fox"} <= wide
    assert "find" not in wide and "likely" not in wide  # light words name no concept
    assert "onion" in wide and "fox" in wide  # the noun-phrase rules still apply
    wide = {p.key for p in phrases("taking tests locked up", tagger=tagger, wide=True)}
    assert {"take test", "lock up", "lock", "test"} <= wide
    wide = {p.key for p in phrases("taking up", tagger=tagger, wide=True)}
    assert "take up" not in wide  # a light verb and a particle name no concept
    assert "is" not in {p.key for p in phrases("the fox is", tagger=tagger, wide=True)}


def test_wide_rules_apply_alike_to_questions_and_options() -> None:
    tagger = fake_tagger(WIDE_TAGS)
    keys = {"sleeping", "sleep", "catch", "chop", "onion", "lock up", "fox"}
    look = lambda ks: {k for k in ks if k in keys}  # noqa: E731
    wide = EntityMatcher(look, tagger=tagger, wide=True)
    narrow = EntityMatcher(look, tagger=tagger)
    assert wide.match("the fox chopping onions").keys == ("fox", "chop", "onion")
    assert narrow.match("the fox chopping onions").keys == ("fox", "onion")
    # every form of a chosen span that is an entity; the whole option in each form
    assert wide.match("the fox sleeping").keys == ("fox", "sleeping", "sleep")
    assert wide.match_option("sleeping").keys == ("sleeping", "sleep")
    assert narrow.match_option("sleeping").keys == ("sleeping",)
    assert wide.match_option("caught").keys == ("catch",)
    assert narrow.match_option("caught").keys == ()
    assert wide.match_option("locked up").keys == ("lock up",)
    assert wide.match_option("caught onions", exclude=("onion",)).keys == ("catch",)


def test_maximal_prefers_longest_then_leftmost_without_overlap() -> None:
    ps = [Phrase(0, 1, "heart", "heart"), Phrase(0, 2, "heart attack", "heart attack"),
          Phrase(1, 3, "attack pain", "attack pain"), Phrase(2, 3, "pain", "pain"),
          Phrase(3, 4, "x", "x")]
    assert [p.key for p in maximal(ps)] == ["heart attack", "pain", "x"]


def test_match_uses_entity_keys_plurals_and_longest_match() -> None:
    m = matcher({"heart attack", "heart", "attack", "fox", "forest"})
    got = m.match("Do Foxes get Heart Attacks in the forests?")
    assert got.keys == ("fox", "heart attack", "forest")


def test_match_follows_merged_keys() -> None:
    m = matcher({"myocardial infarction"}, {"heart attack": "myocardial infarction"})
    assert m.match("a heart attack").keys == ("myocardial infarction",)


def test_no_match_and_empty_text() -> None:
    m = matcher({"fox"})
    assert m.match("").keys == () and m.match("the of and").keys == ()
    assert m.match("Where is the dog?").keys == ()


def test_option_is_its_whole_key_else_inner_entities_minus_the_questions() -> None:
    m = matcher({"record store", "record", "store", "patient", "cell wall"})
    assert m.match_option("Record Stores").keys == ("record store",)
    # no entity "inhibition of cell wall synthesis": the inner entities, but "patient"
    # is named by the question, so it does not count for the option
    got = m.match_option("Inhibition of cell wall synthesis in the patient",
                         exclude=("patient",))
    assert got.keys == ("cell wall",)
    assert m.match_option("   ").keys == ()


def test_title_keys_drop_a_trailing_parenthetical() -> None:
    assert title_keys("Big Stone Gap (film)") == ["big stone gap (film)", "big stone gap"]
    assert title_keys("Adriana Trigiani") == ["adriana trigiani"]


def test_lookups_are_batched_and_deduplicated() -> None:
    calls: list[Sequence[str]] = []

    def lookup(keys: Sequence[str]) -> set[str]:
        calls.append(keys)
        return set()

    EntityMatcher(lookup).match("fox fox fox fox")
    assert len(calls) == 1 and sorted(calls[0]) == sorted(set(calls[0]))


# --- distances ----------------------------------------------------------------------------
class MemoryReach:
    """`Reach` over an undirected edge list; counts its reads."""

    def __init__(self, edges: list[tuple[str, str]], cap: int = 1000) -> None:
        self.adj: dict[str, set[str]] = {}
        for a, b in edges:
            self.adj.setdefault(a, set()).add(b)
            self.adj.setdefault(b, set()).add(a)
        self.cap, self.reads = cap, 0

    def balls(self, keys: Sequence[str]) -> Ball:
        self.reads += 1
        ball = Ball()
        for k in keys:
            if k in self.adj:
                ball.neighbours[k] = set(sorted(self.adj[k])[: self.cap])
                ball.cut |= len(self.adj[k]) >= self.cap
        return ball

    def meet(self, frontier: Sequence[str], wanted: Sequence[str]) -> set[str]:
        self.reads += 1
        return {y for x in frontier for y in self.adj.get(x, ()) if y in set(wanted)}


# a chain s - a - b - c - d, and e isolated from it (e - f)
CHAIN = [("s", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("e", "f")]


def test_distances_on_a_chain_in_two_reads() -> None:
    reach = MemoryReach(CHAIN)
    d = distances(["s"], ["s", "a", "b", "c", "d", "e", "zzz"], reach)
    assert d.hops == {"s": 0, "a": 1, "b": 2, "c": 3, "d": UNREACHED, "e": UNREACHED,
                      "zzz": UNREACHED}
    assert reach.reads == 2 and not d.truncated


def test_distances_skip_the_second_read_when_all_are_near() -> None:
    reach = MemoryReach(CHAIN)
    assert distances(["s"], ["a", "b"], reach).hops == {"a": 1, "b": 2}
    assert reach.reads == 1
    assert distances([], ["a"], reach).hops == {"a": UNREACHED} and reach.reads == 1


def test_a_cut_neighbour_list_is_reported() -> None:
    hub = [("s", f"n{i}") for i in range(5)] + [("n4", "x")]
    d = distances(["s"], ["n4", "x"], MemoryReach(hub, cap=3))
    # s's list is cut before n4, but n4's own list names s: still 1 hop; x is hidden
    # behind the cut (never invented, only missed)
    assert d.truncated and d.hops == {"n4": 1, "x": UNREACHED}


def test_the_frontier_cap_truncates() -> None:
    edges = [("s", "a"), ("s", "b"), ("b", "c"), ("c", "t")]
    assert distances(["s"], ["t"], MemoryReach(edges)).hops["t"] == 3
    d = distances(["s"], ["t"], MemoryReach(edges), frontier_cap=1)  # keeps "a" only
    assert d.truncated and d.hops["t"] == UNREACHED


# --- questions and shares -----------------------------------------------------------------
def mcq(qid: str, text: str, options: list[str], answer: str) -> Question:
    return Question(id=qid, text=text, kind="multiple_choice", answers=[answer],
                    choices=[Choice(label="ABCDE"[i], text=t) for i, t in enumerate(options)])


def test_cover_question_multiple_choice() -> None:
    m = matcher({"s", "a", "b", "c", "d", "e"})
    q = mcq("1", "what about s?", ["b", "d", "nothing here", "a"], "A")
    c = cover_question(q, m, MemoryReach(CHAIN))
    assert c is not None and c.seeds == ("s",)
    assert c.correct == (2,) and c.wrong == (UNREACHED, NO_ENTITY, 1)


def test_cover_question_open_needs_every_supporting_title() -> None:
    m = matcher({"s", "a", "c", "e", "big stone gap"})
    q = Question(id="h", text="s?", supporting=["A", "Big Stone Gap (film)"],
                 contexts=[Passage(id="1", title="A", text="x"),
                           Passage(id="2", title="Big Stone Gap (film)", text="y"),
                           Passage(id="3", title="E", text="z")])
    reach = MemoryReach([*CHAIN, ("s", "big stone gap")])
    c = cover_question(q, m, reach)
    assert c is not None and c.all_correct
    assert c.correct == (1, 1) and c.wrong == (UNREACHED,)
    assert cover_question(Question(id="n", text="s?"), m, reach) is None


def test_summarise_shares_by_definition() -> None:
    covs = [
        QuestionCoverage(("s",), correct=(1,), wrong=(2, UNREACHED, NO_ENTITY, 3),
                         all_correct=False),
        QuestionCoverage(("s",), correct=(3,), wrong=(1, 1, 1, 1), all_correct=False),
        QuestionCoverage((), correct=(NO_ENTITY,), wrong=(NO_ENTITY,) * 4,
                         all_correct=False),
        QuestionCoverage(("x",), correct=(1, UNREACHED), wrong=(), all_correct=True),
    ]
    r = summarise(covs, dataset="t", domain="d")
    assert r.questions == 4 and r.concepts_matched == 0.75
    # one statistic on both sides: the open question's correct fraction is 1/2
    assert r.correct_within_hops == {"1": 0.375, "2": 0.375, "3": 0.625}
    # wrong fractions per question at h=2: 1/4, 4/4, 0, 0 (no wrong targets) → mean
    assert r.wrong_within_hops["2"] == pytest.approx((0.25 + 1.0) / 4)
    assert r.wrong_within_hops["3"] == pytest.approx((0.5 + 1.0) / 4)
    assert r.any_wrong_within_hops == {"1": 0.25, "2": 0.5, "3": 0.5}
    assert r.only_correct_within_hops == {"1": 0.25, "2": 0.0, "3": 0.0}
    assert r.correct_matched == 0.75  # named, even if farther than 3 hops
    assert r.wrong_matched == pytest.approx((0.75 + 1.0) / 4)


def test_named_targets_count_apart_and_kinds_discriminate_at_one_hop() -> None:
    loc, isa = frozenset({"AtLocation"}), frozenset({"IsA"})
    covs = [
        QuestionCoverage(("s",), correct=(0, 1), wrong=(1, 2), all_correct=True,
                         correct_kinds=(frozenset(), loc), wrong_kinds=(isa, frozenset())),
        QuestionCoverage(("s",), correct=(1,), wrong=(0, 1, 1, UNREACHED),
                         all_correct=False, correct_kinds=(loc,),
                         wrong_kinds=(frozenset(), loc, isa, frozenset())),
    ]
    r = summarise(covs, dataset="t", domain="d")
    assert r.correct_named == pytest.approx((0.5 + 0) / 2)
    assert r.wrong_named == pytest.approx((0 + 0.25) / 2)
    # the named title leaves both fractions: question 1's correct side is 1/1 at 1 hop
    assert r.correct_within_hops["1"] == 1.0
    assert r.wrong_within_hops["1"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert r.correct_by_kind == {"AtLocation": 1.0, "IsA": 0.0}
    assert r.wrong_by_kind["AtLocation"] == pytest.approx((0 + 1 / 3) / 2)
    assert r.wrong_by_kind["IsA"] == pytest.approx((0.5 + 1 / 3) / 2)


def test_wide_rules_add_conceptnet_normal_forms() -> None:
    tagger = fake_tagger({"revolving": ("VERB", "revolve"), "doors": ("NOUN", "door"),
                          "go": ("VERB", "go"), "to": ("ADP", "to"), "bed": ("NOUN", "bed")})
    wide = {p.key for p in phrases("revolving doors", tagger=tagger, wide=True)}
    assert "revolve door" in wide
    assert "go bed" in {p.key for p in phrases("go to bed", tagger=tagger, wide=True)}
    narrow = {p.key for p in phrases("revolving doors", tagger=tagger)}
    assert "revolve door" not in narrow  # kg-ppr's noun-phrase rules are unchanged


def test_match_all_keeps_the_concepts_inside_longer_phrases() -> None:
    look = lambda ks: {k for k in ks if k in {"bake cookie", "cookie", "grandma"}}  # noqa: E731
    m = EntityMatcher(look)
    assert m.match("grandma wants to bake cookies").keys == ("grandma", "bake cookie")
    assert m.match_all("grandma wants to bake cookies") == ("grandma", "bake cookie", "cookie")
