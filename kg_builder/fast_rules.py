"""Relation rules over a spaCy dependency parse: the fast extractor's facts.

Pure functions of a parsed sentence (a spaCy `Span`); no model is loaded here, so unit
tests build parsed `Doc`s by hand. The rules (see `sentence_facts`):

- subject–verb–object: "foxes eat mice" → (fox, eat, mouse); a verb's prepositional
  object joins the verb: "foxes live in forests" → (fox, live in, forest); passives:
  "mice are eaten by foxes" → (fox, eat, mouse), "Paris is located in France" →
  (Paris, located in, France); negation is kept ("not eat");
- copula and apposition: "a fox is an animal", "Paris, the capital, …" → (…, is a, …);
  an adjective complement: "apples are red" → (apple, is, red);
- "used for": "a knife is used for cutting bread", "… is used to cut bread", "a tool used
  for …" → (knife, used for, cut bread);
- prepositional attachments of nouns: "the capital of France" → (capital, of, France),
  for the prepositions in `NOUN_PREPOSITIONS`;
- possessives: "France's capital" → (France, has, capital).

Entity names are the noun chunks that the arguments head, lemmatised (nouns; proper nouns
keep their text), with determiners, possessors and pronouns dropped. Pronouns and
wh-words are no entity, except that in a question whose answer is known (a "Question:
…" line followed by "Answer: …") the wh-word stands for the answer: "Where would you find
a fox?" + "forest" → (fox, find in, forest).

    facts = sentence_facts(next(nlp("Foxes live in forests.").sents))
    [(f.head, f.relation, f.tail) for f in facts]
    # -> [('fox', 'live in', 'forest')]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

from spacy.tokens import Span, Token

from kg_builder.normalize import clean_name, entity_key, only_function_words

# Version of these rules: part of a fast build job's identity (a change re-extracts).
RULES_VERSION = "3"

NOUN_PREPOSITIONS = frozenset((
    "of", "in", "on", "at", "from", "with", "for", "near", "inside", "under", "into",
    "during", "after", "before", "without", "within", "between", "among", "by", "about",
    "against", "through", "over", "behind", "beside", "outside", "around",
))
SPATIAL = frozenset(("in", "on", "at", "near", "inside", "under", "into", "within",
                     "between", "among", "over", "behind", "beside", "outside", "around",
                     "from"))
TEMPORAL = frozenset(("during", "after", "before", "since", "until"))
CAUSAL_VERBS = frozenset(("cause", "lead", "result", "prevent", "trigger", "produce",
                          "induce", "reduce", "increase", "inhibit", "treat"))
WH_WORDS = frozenset(("what", "which", "who", "whom", "where", "whose"))
_WH_TAGS = ("WP", "WDT", "WRB", "WP$")
# "thousands of chairs", "a lot of candles": the entity is what follows "of"
QUANTITY_NOUNS = frozenset(("lot", "lots", "number", "kind", "type", "sort", "variety",
                            "plenty", "couple", "bunch", "amount", "thousand", "million",
                            "hundred", "dozen", "majority", "range", "piece", "deal"))
_KIND_NOUNS = frozenset(("kind", "type", "sort", "variety"))
_NOUNS = frozenset(("NOUN", "PROPN", "NUM"))
_SUBJ = ("nsubj",)
_MAX_WORDS = 6
_MAX_CHARS = 80


@dataclass(frozen=True)
class RawFact:
    """A fact read from one sentence, before keys and provenance are attached."""

    head: str
    relation: str
    tail: str
    kind: str


def kind_of(relation: str) -> str:
    """The relation kind (`kg_builder.domains`) a rule's relation belongs to."""
    words = [w for w in relation.split() if w != "not"]
    last = words[-1] if words else ""
    if words in (["is", "a"], ["is"], ["has"], ["have"]):
        return "conceptual" if words == ["is", "a"] else "property"
    if relation == "used for":
        return "function"
    if words and words[0] in CAUSAL_VERBS:
        return "causal"
    if last in TEMPORAL:
        return "temporal"
    if last in SPATIAL:
        return "spatial"
    return "other"


class _Names:
    """Entity names of the tokens of one sentence (noun chunks, wh-words → answer)."""

    def __init__(self, sent: Span, answer: str | None) -> None:
        self.chunk_of: dict[int, Span] = {}
        for nc in sent.noun_chunks:
            self.chunk_of[nc.root.i] = nc
        # the answer fills the question's one wh-word; with two ("In fact, who was very
        # what?") it is not known which, so none is filled
        asking = [t for t in sent if _is_question_word(t)]
        self.answer = clean_name(answer) if answer and len(asking) == 1 else None

    def name(self, tok: Token) -> str | None:
        """The entity a token stands for, or None (pronouns, verbs, function words)."""
        if tok.lower_ in WH_WORDS or tok.tag_ in _WH_TAGS:
            return self.answer if _is_question_word(tok) else None
        chunk = self.chunk_of.get(tok.i)
        if chunk is not None and any(_is_question_word(t) for t in chunk):
            return self.answer  # "which animal", "what kind of food"
        if tok.lemma_.lower() in QUANTITY_NOUNS:
            of = _of_object(tok)
            return self.name(of) if of is not None else None
        if tok.pos_ == "PRON" or (tok.pos_ not in _NOUNS and chunk is None):
            return None
        words = chunk if chunk is not None else [
            t for t in tok.lefts if t.dep_ in ("compound", "amod")] + [tok]
        return _render([t for t in words if _keep(t, tok)])

    def adjective(self, tok: Token) -> str | None:
        if tok.pos_ != "ADJ":
            return None
        words = [t for t in tok.lefts if t.dep_ == "advmod" and t.pos_ == "ADV"] + [tok]
        return _render(words)


def _is_question_word(t: Token) -> bool:
    """A wh-word that asks (not a relative pronoun: "someone who takes part")."""
    if not (t.lower_ in WH_WORDS or t.tag_ in _WH_TAGS):
        return False
    return not any(a.dep_ in ("relcl", "acl") for a in [t.head, *t.head.ancestors][:2])


def _of_object(tok: Token) -> Token | None:
    """The object of a noun's "of" ("lots of [candles]")."""
    for prep in tok.children:
        if prep.dep_ == "prep" and prep.lower_ == "of":
            for o in prep.children:
                if o.dep_ == "pobj":
                    return o
    return None


def _keep(t: Token, root: Token) -> bool:
    """Tokens of a noun chunk that belong to the name: no determiner, possessor,
    pronoun, punctuation or possessive marker (the possessor is a fact of its own)."""
    if t.i == root.i:
        return True
    if t.dep_ in ("det", "predet", "poss", "case", "punct", "cc", "preconj") or t.pos_ in (
            "DET", "PRON", "PUNCT"):
        return False
    # a possessor's own words ("the [old man]'s dog"): everything left of a 's
    return not any(a.dep_ == "poss" and a.head.i == root.i for a in t.ancestors if a != root)


def _render(words: Sequence[Token]) -> str | None:
    if not words:
        return None
    text = " ".join(t.text if t.pos_ == "PROPN" else (
        t.lemma_.lower() if t.pos_ == "NOUN" else t.lower_) for t in words)
    name = clean_name(text.replace(" - ", "-"))
    if (not name or len(name) > _MAX_CHARS or len(name.split()) > _MAX_WORDS
            or only_function_words(name) or not any(ch.isalnum() for ch in name)):
        return None
    return name


def _expand(tok: Token) -> list[Token]:
    """A token and its conjuncts ("cats and dogs" → cats, dogs)."""
    return [tok, *tok.conjuncts]


def _neg(verb: Token) -> str:
    return "not " if any(c.dep_ == "neg" for c in verb.children) else ""


def _verb_text(verb: Token) -> str:
    particle = " ".join(c.lower_ for c in verb.children if c.dep_ == "prt")
    return f"{_neg(verb)}{verb.lemma_.lower()}" + (f" {particle}" if particle else "")


def _subjects(verb: Token, deps: tuple[str, ...] = _SUBJ) -> list[Token]:
    """A verb's subjects; a conjoined verb without one takes its head verb's
    ("foxes hunt and eat mice")."""
    subs = [s for c in verb.children if c.dep_ in deps for s in _expand(c)]
    if not subs and verb.dep_ == "conj" and verb.head.pos_ in ("VERB", "AUX"):
        return _subjects(verb.head, deps)
    if verb.dep_ in ("acl", "relcl") and verb.head.pos_ in _NOUNS:
        # "a tool used for cutting"; "a drug that reduces fever": the relative pronoun
        # stands for the noun the clause describes; a bare participle ("a bone located
        # in the arm") is passive: the noun is its passive subject, not an agent
        participle = verb.tag_ == "VBN" and not any(c.dep_ == "nsubj" for c in verb.children)
        if not subs and (participle == ("nsubjpass" in deps)):
            subs = [verb.head]
        elif verb.dep_ == "relcl":
            subs = [verb.head if s.tag_ in ("WDT", "WP") else s for s in subs]
    return subs


def _objects(verb: Token, dep: str) -> list[Token]:
    return [o for c in verb.children if c.dep_ == dep for o in _expand(c)]


def _prep_objects(head: Token) -> Iterator[tuple[str, Token]]:
    """(preposition, object) pairs of a token's prepositional children."""
    for prep in head.children:
        if prep.dep_ not in ("prep", "agent"):
            continue
        for obj in prep.children:
            if obj.dep_ == "pobj":
                for o in _expand(obj):
                    yield prep.lower_, o


class _Facts:
    """Collects the facts of one sentence (duplicates and self-loops dropped)."""

    def __init__(self, names: _Names) -> None:
        self.names = names
        self.out: dict[tuple[str, str, str], RawFact] = {}

    def add(self, head: str | None, relation: str, tail: str | None) -> None:
        if not head or not tail or not relation:
            return
        if entity_key(head) == entity_key(tail):
            return
        key = (entity_key(head), relation, entity_key(tail))
        self.out.setdefault(key, RawFact(head, relation, tail, kind_of(relation)))

    def tok(self, h: Token, relation: str, t: Token) -> None:
        self.add(self.names.name(h), relation, self.names.name(t))


def _gerund_phrase(verb: Token) -> str | None:
    """"cutting bread" / "to cut bread" as a name: the verb's lemma and its object."""
    obj = next((o for o in verb.children if o.dep_ == "dobj"), None)
    words = [verb.lemma_.lower()]
    if obj is not None:
        words += [t.lemma_.lower() if t.pos_ == "NOUN" else t.lower_
                  for t in obj.subtree if t.dep_ not in ("det", "poss", "punct", "case")
                  and t.pos_ not in ("DET", "PRON")][:4]
    return _render_plain(" ".join(words))


def _render_plain(text: str) -> str | None:
    name = clean_name(text)
    if not name or only_function_words(name) or len(name) > _MAX_CHARS:
        return None
    return name


def _use_to(verb: Token, facts: _Facts) -> None:
    """Active "(people) use X to V Y" → (X, used for, V Y)."""
    purposes = [_gerund_phrase(c) for c in verb.children
                if c.dep_ in ("xcomp", "advcl") and c.pos_ == "VERB"]
    for o in _objects(verb, "dobj"):
        for p in purposes:
            facts.add(facts.names.name(o), "used for", p)


def _used_for(verb: Token, facts: _Facts) -> bool:
    """"X is used for Y" / "X is used to V Y" / "X used for Y"; True when it applied."""
    if verb.lemma_.lower() != "use":
        return False
    if verb.tag_ != "VBN":
        _use_to(verb, facts)
        return False
    subjects = _subjects(verb, ("nsubjpass",)) or (
        [verb.head] if verb.dep_ == "acl" else [])
    purposes: list[str | None] = []
    for prep in (c for c in verb.children if c.dep_ == "prep" and c.lower_ in ("for", "as")):
        for c in prep.children:
            if c.dep_ == "pobj":
                purposes += [facts.names.name(o) for o in _expand(c)]
            elif c.dep_ == "pcomp":
                purposes.append(_gerund_phrase(c))
    for c in verb.children:
        if c.dep_ in ("xcomp", "advcl") and c.pos_ == "VERB":
            purposes.append(_gerund_phrase(c))
    for s in subjects:
        for p in purposes:
            facts.add(facts.names.name(s), "used for", p)
    return bool(subjects and purposes)


def _verb_rules(verb: Token, facts: _Facts) -> None:
    names = facts.names
    if _used_for(verb, facts):
        return
    subjects = _subjects(verb)
    if verb.lemma_.lower() == "be":
        neg = _neg(verb)
        for s in subjects:
            for a in _objects(verb, "attr"):
                facts.tok(s, f"is {neg}a" if neg else "is a", a)
            adjectives = _objects(verb, "acomp")
            for a in adjectives:
                facts.add(names.name(s), f"is {neg}".strip(), names.adjective(a))
            # "was good at his duties": a preposition on the copula is the adjective's
            between = f"{adjectives[0].lower_} " if len(adjectives) == 1 else ""
            for prep, o in _prep_objects(verb):
                facts.tok(s, f"is {neg}{between}{prep}", o)
        return
    text = _verb_text(verb)
    for s in subjects:
        for o in _objects(verb, "dobj"):
            no = any(c.dep_ == "det" and c.lower_ == "no" for c in o.children)
            facts.tok(s, f"not {text}" if no and not text.startswith("not ") else text, o)
        for prep, o in _prep_objects(verb):
            facts.tok(s, f"{text} {prep}", o)
        if verb.lemma_.lower() in ("become", "remain"):
            for a in _objects(verb, "attr"):
                facts.tok(s, text, a)
    where = names.answer and any(c.lower_ == "where" for c in verb.children)
    if where:  # "Where do foxes live?" / "Where would you find a fox?" + the answer
        objects = _objects(verb, "dobj")
        for x in objects or subjects:
            facts.add(names.name(x), f"{text} in", names.answer)
    passive = _subjects(verb, ("nsubjpass",))
    if where and not subjects:  # "a bone located where?" + "arm"
        for x in passive:
            facts.add(names.name(x), f"{_neg(verb)}{verb.lower_} in", names.answer)
    for s in passive:
        for prep, o in _prep_objects(verb):
            if prep == "by":
                facts.tok(o, text, s)
            else:
                facts.tok(s, f"{_neg(verb)}{verb.lower_} {prep}", o)


def _noun_rules(noun: Token, facts: _Facts) -> None:
    lemma = noun.lemma_.lower()
    if lemma in QUANTITY_NOUNS:  # "what kind of box" + "aquarium" → (aquarium, is a, box)
        of = _of_object(noun)
        chunk = facts.names.chunk_of.get(noun.i)
        if lemma in _KIND_NOUNS and of is not None and chunk is not None and any(
                _is_question_word(t) for t in chunk):
            facts.add(facts.names.answer, "is a", facts.names.name(of))
        return
    for c in noun.children:
        if c.dep_ == "appos":
            # "Paris, the capital": a common noun; "Tashkent, Uzbekistan", "November 11,
            # 1890" and list items are parsed as appositions too, but are no is-a
            for a in _expand(c):
                if a.pos_ == "NOUN" and noun.pos_ != "NUM":
                    facts.tok(noun, "is a", a)
        elif c.dep_ == "poss" and c.pos_ != "PRON":
            facts.tok(c, "has", noun)
    for prep, o in _prep_objects(noun):
        if prep in NOUN_PREPOSITIONS:
            facts.tok(noun, prep, o)


def sentence_facts(sent: Span, answer: str | None = None) -> list[RawFact]:
    """The facts the rules read from one parsed sentence (see the module docstring)."""
    facts = _Facts(_Names(sent, answer))
    for tok in sent:
        if tok.pos_ in ("VERB", "AUX"):
            _verb_rules(tok, facts)
        elif tok.pos_ in _NOUNS:
            _noun_rules(tok, facts)
    return list(facts.out.values())


def sentence_entities(sent: Span, answer: str | None = None, limit: int = 8) -> list[str]:
    """The entity names of a sentence's noun chunks, in order, each key once (for
    co-occurrence), at most `limit`."""
    names = _Names(sent, answer)
    out: dict[str, str] = {}
    for nc in sent.noun_chunks:
        name = names.name(nc.root)
        if name and entity_key(name) not in out:
            out[entity_key(name)] = name
        if len(out) >= limit:
            break
    return list(out.values())


def cooccurring_pairs(names: Sequence[str], window: int = 3) -> list[tuple[str, str]]:
    """Pairs of names at most `window` apart in a sentence's list (FastGraphRAG-style
    co-occurrence, narrowed to a window so long sentences do not give all pairs)."""
    return [(a, b) for (i, a), (j, b) in combinations(enumerate(names), 2) if j - i <= window]
