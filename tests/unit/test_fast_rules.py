"""The fast extractor's relation rules on hand-parsed sentences (no model is loaded: each
Doc is built with the words, heads, labels, tags and lemmas a parser would give)."""

from __future__ import annotations

import pytest
import spacy
from spacy.tokens import Doc, Span

from kg_builder.fast_rules import (
    cooccurring_pairs,
    kind_of,
    sentence_entities,
    sentence_facts,
)

VOCAB = spacy.blank("en").vocab

# (word, head index, dep, pos, tag, lemma)
Tok = tuple[str, int, str, str, str, str]


def sent(*toks: Tok) -> Span:
    words = [t[0] for t in toks]
    doc = Doc(VOCAB, words=words, heads=[t[1] for t in toks], deps=[t[2] for t in toks],
              pos=[t[3] for t in toks], tags=[t[4] for t in toks],
              lemmas=[t[5] for t in toks])
    return doc[:]


def facts(span: Span, answer: str | None = None) -> set[tuple[str, str, str, str]]:
    return {(f.head, f.relation, f.tail, f.kind) for f in sentence_facts(span, answer)}


FOXES_LIVE = sent(("Foxes", 1, "nsubj", "NOUN", "NNS", "fox"),
                  ("live", 1, "ROOT", "VERB", "VBP", "live"),
                  ("in", 1, "prep", "ADP", "IN", "in"),
                  ("forests", 2, "pobj", "NOUN", "NNS", "forest"),
                  (".", 1, "punct", "PUNCT", ".", "."))


def test_verb_with_prepositional_object_and_lemmatised_names() -> None:
    assert facts(FOXES_LIVE) == {("fox", "live in", "forest", "spatial")}


def test_copula_is_a_and_its_negation() -> None:
    fox = sent(("A", 1, "det", "DET", "DT", "a"), ("fox", 2, "nsubj", "NOUN", "NN", "fox"),
               ("is", 2, "ROOT", "AUX", "VBZ", "be"), ("an", 4, "det", "DET", "DT", "an"),
               ("animal", 2, "attr", "NOUN", "NN", "animal"))
    assert facts(fox) == {("fox", "is a", "animal", "conceptual")}
    whale = sent(("A", 1, "det", "DET", "DT", "a"),
                 ("whale", 2, "nsubj", "NOUN", "NN", "whale"),
                 ("is", 2, "ROOT", "AUX", "VBZ", "be"), ("not", 2, "neg", "PART", "RB", "not"),
                 ("a", 5, "det", "DET", "DT", "a"), ("fish", 2, "attr", "NOUN", "NN", "fish"))
    assert facts(whale) == {("whale", "is not a", "fish", "conceptual")}


def test_used_for_with_a_gerund_purpose() -> None:
    knife = sent(("A", 1, "det", "DET", "DT", "a"),
                 ("knife", 3, "nsubjpass", "NOUN", "NN", "knife"),
                 ("is", 3, "auxpass", "AUX", "VBZ", "be"),
                 ("used", 3, "ROOT", "VERB", "VBN", "use"),
                 ("for", 3, "prep", "ADP", "IN", "for"),
                 ("cutting", 4, "pcomp", "VERB", "VBG", "cut"),
                 ("bread", 5, "dobj", "NOUN", "NN", "bread"))
    assert facts(knife) == {("knife", "used for", "cut bread", "function")}


def test_apposition_noun_preposition_and_adjective_complement() -> None:
    paris = sent(("Paris", 6, "nsubj", "PROPN", "NNP", "Paris"),
                 (",", 0, "punct", "PUNCT", ",", ","),
                 ("the", 3, "det", "DET", "DT", "the"),
                 ("capital", 0, "appos", "NOUN", "NN", "capital"),
                 ("of", 3, "prep", "ADP", "IN", "of"),
                 ("France", 4, "pobj", "PROPN", "NNP", "France"),
                 ("is", 6, "ROOT", "AUX", "VBZ", "be"),
                 ("old", 6, "acomp", "ADJ", "JJ", "old"))
    assert facts(paris) == {("Paris", "is a", "capital", "conceptual"),
                            ("capital", "of", "France", "other"),
                            ("Paris", "is", "old", "property")}


def test_possessive_and_the_possessor_left_out_of_the_name() -> None:
    dog = sent(("John", 2, "poss", "PROPN", "NNP", "John"),
               ("'s", 0, "case", "PART", "POS", "'s"),
               ("dog", 3, "nsubj", "NOUN", "NN", "dog"),
               ("barks", 3, "ROOT", "VERB", "VBZ", "bark"))
    assert facts(dog) == {("John", "has", "dog", "property")}
    assert sentence_entities(dog) == ["dog"]  # the chunk "John's dog" is named "dog"


def test_passive_with_agent_becomes_active() -> None:
    mice = sent(("Mice", 2, "nsubjpass", "NOUN", "NNS", "mouse"),
                ("are", 2, "auxpass", "AUX", "VBP", "be"),
                ("eaten", 2, "ROOT", "VERB", "VBN", "eat"),
                ("by", 2, "agent", "ADP", "IN", "by"),
                ("owls", 3, "pobj", "NOUN", "NNS", "owl"))
    assert facts(mice) == {("owl", "eat", "mouse", "other")}


def test_pronouns_are_no_entities_but_a_known_answer_fills_the_wh_word() -> None:
    where = sent(("Where", 3, "advmod", "SCONJ", "WRB", "where"),
                 ("would", 3, "aux", "AUX", "MD", "would"),
                 ("you", 3, "nsubj", "PRON", "PRP", "you"),
                 ("find", 3, "ROOT", "VERB", "VB", "find"),
                 ("a", 5, "det", "DET", "DT", "a"),
                 ("fox", 3, "dobj", "NOUN", "NN", "fox"),
                 ("?", 3, "punct", "PUNCT", ".", "?"))
    assert facts(where) == set()  # "you find fox": no entity "you"
    assert facts(where, answer="forest") == {("fox", "find in", "forest", "spatial")}
    assert sentence_entities(where, "forest") == ["fox"]


def test_relative_pronoun_stands_for_the_noun_it_describes() -> None:
    aspirin = sent(("Aspirin", 1, "nsubj", "NOUN", "NN", "aspirin"),
                   ("is", 1, "ROOT", "AUX", "VBZ", "be"),
                   ("a", 3, "det", "DET", "DT", "a"),
                   ("drug", 1, "attr", "NOUN", "NN", "drug"),
                   ("that", 5, "nsubj", "PRON", "WDT", "that"),
                   ("reduces", 3, "relcl", "VERB", "VBZ", "reduce"),
                   ("fever", 5, "dobj", "NOUN", "NN", "fever"))
    assert facts(aspirin) == {("aspirin", "is a", "drug", "conceptual"),
                              ("drug", "reduce", "fever", "causal")}


def test_conjoined_subjects_each_get_the_fact() -> None:
    cats = sent(("Cats", 3, "nsubj", "NOUN", "NNS", "cat"),
                ("and", 0, "cc", "CCONJ", "CC", "and"),
                ("dogs", 0, "conj", "NOUN", "NNS", "dog"),
                ("eat", 3, "ROOT", "VERB", "VBP", "eat"),
                ("meat", 3, "dobj", "NOUN", "NN", "meat"))
    assert facts(cats) == {("cat", "eat", "meat", "other"), ("dog", "eat", "meat", "other")}


@pytest.mark.parametrize(("relation", "kind"), [
    ("is a", "conceptual"), ("is not a", "conceptual"), ("is", "property"),
    ("is not", "property"), ("is in", "spatial"),
    ("has", "property"), ("used for", "function"), ("cause", "causal"),
    ("not prevent", "causal"), ("live in", "spatial"), ("die after", "temporal"),
    ("write", "other"), ("of", "other")])
def test_kind_of_relation(relation: str, kind: str) -> None:
    assert kind_of(relation) == kind


def test_cooccurrence_pairs_within_a_window() -> None:
    assert cooccurring_pairs(["a", "b", "c", "d"], window=2) == [
        ("a", "b"), ("a", "c"), ("b", "c"), ("b", "d"), ("c", "d")]
    assert cooccurring_pairs(["a"], window=3) == []
    assert sentence_entities(FOXES_LIVE) == ["fox", "forest"]


def test_quantity_nouns_name_what_follows_of() -> None:
    lots = sent(("Churches", 1, "nsubj", "NOUN", "NNS", "church"),
                ("have", 1, "ROOT", "VERB", "VBP", "have"),
                ("a", 3, "det", "DET", "DT", "a"), ("lot", 1, "dobj", "NOUN", "NN", "lot"),
                ("of", 3, "prep", "ADP", "IN", "of"),
                ("candles", 4, "pobj", "NOUN", "NNS", "candle"))
    assert facts(lots) == {("church", "have", "candle", "property")}  # no ("lot", "of", …)


def test_what_kind_of_with_an_answer_is_an_is_a() -> None:
    kind = sent(("What", 1, "det", "PRON", "WDT", "what"),
                ("kind", 5, "dobj", "NOUN", "NN", "kind"),
                ("of", 1, "prep", "ADP", "IN", "of"), ("box", 2, "pobj", "NOUN", "NN", "box"),
                ("does", 5, "aux", "AUX", "VBZ", "do"),
                ("fish", 5, "nsubj", "NOUN", "NN", "fish"),
                ("live", 5, "ROOT", "VERB", "VB", "live"))
    assert ("aquarium", "is a", "box", "conceptual") in facts(kind, answer="aquarium")


def test_two_question_words_fill_neither_and_relative_who_is_no_question() -> None:
    two = sent(("Who", 1, "nsubj", "PRON", "WP", "who"), ("was", 1, "ROOT", "AUX", "VBD", "be"),
               ("what", 1, "attr", "PRON", "WP", "what"))
    assert facts(two, answer="deceitful") == set()
    someone = sent(("Man", 3, "nsubj", "NOUN", "NN", "man"),
                   ("who", 2, "nsubj", "PRON", "WP", "who"),
                   ("takes", 0, "relcl", "VERB", "VBZ", "take"),
                   ("is", 3, "ROOT", "AUX", "VBZ", "be"),
                   ("what", 3, "attr", "PRON", "WP", "what"))
    got = facts(someone, answer="being imprisoned")
    assert got == {("man", "is a", "being imprisoned", "conceptual")}  # not "who takes"


def test_apposition_of_a_proper_noun_or_a_date_is_no_is_a() -> None:
    city = sent(("Tashkent", 0, "ROOT", "PROPN", "NNP", "Tashkent"),
                (",", 0, "punct", "PUNCT", ",", ","),
                ("Uzbekistan", 0, "appos", "PROPN", "NNP", "Uzbekistan"))
    assert facts(city) == set()


def test_no_determiner_negates_the_verb() -> None:
    car = sent(("The", 1, "det", "DET", "DT", "the"),
               ("person", 2, "nsubj", "NOUN", "NN", "person"),
               ("had", 2, "ROOT", "VERB", "VBD", "have"), ("no", 4, "det", "DET", "DT", "no"),
               ("car", 2, "dobj", "NOUN", "NN", "car"))
    assert facts(car) == {("person", "not have", "car", "property")}
