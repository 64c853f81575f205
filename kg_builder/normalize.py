"""Name normalisation shared by extraction, resolution and source selection.

Two forms of every entity name:

- the display name (`clean_name`): whitespace collapsed, surrounding quotes and trailing
  sentence punctuation removed, everything else kept as data (case, inner quotes,
  backticks, emoji, Cypher-looking text — names only ever travel as query parameters);
- the key (`entity_key`): the display name NFKC-folded, lower-cased, with the last word
  made singular, so "Heart Attacks", "heart attack" and '"heart attack."' share a key.

>>> clean_name('  "Heart\\n Attacks." ')
'Heart Attacks'
>>> entity_key("Heart Attacks")
'heart attack'
"""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_QUOTES = "\"'`“”‘’«»„‚‹›「」『』"
_LEADING = _QUOTES + "*•·–—-"  # list bullets a model may leave in front of a name
_TRAILING = _QUOTES + ".,;:!?"

# Words that look plural but are not, and plurals the suffix rules would get wrong.
_NOT_PLURAL = frozenset((
    "alias", "arkansas", "atlas", "bias", "canvas", "christmas", "clothes", "diabetes",
    "economics", "ethics", "gas", "glasses", "herpes", "kansas", "lens", "mathematics",
    "measles", "mumps", "news", "pajamas", "pancreas", "pants", "physics", "politics",
    "pyjamas", "rabies", "rickets", "scabies", "scissors", "series", "shingles", "species",
    "texas", "whereas"
))
_IRREGULAR = {
    "analyses": "analysis", "calories": "calorie", "cookies": "cookie", "crises": "crisis",
    "diagnoses": "diagnosis", "movies": "movie", "prognoses": "prognosis", "theses": "thesis",
    "zombies": "zombie",
}
_ARTICLES = frozenset(("the", "a", "an"))
_STOPWORDS = frozenset((
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "without",
    "and", "or", "but", "not", "no", "is", "are", "was", "were", "be", "been", "being", "it",
    "its", "this", "that", "these", "those", "there", "their", "they", "them", "he", "she",
    "his", "her", "you", "your", "we", "our", "i", "me", "my", "what", "which", "who", "whom",
    "whose", "where", "when", "why", "how", "can", "could", "would", "should", "will", "shall",
    "may", "might", "must", "do", "does", "did", "have", "has", "had", "as", "if", "than",
    "then", "so", "such", "into", "onto", "about", "over", "under", "up", "down", "out", "off",
    "some", "any", "all", "each", "every", "other", "another", "one"
))


def collapse(text: str) -> str:
    """Whitespace runs (newlines, tabs) to one space, trimmed."""
    return _SPACE.sub(" ", text).strip()


def clean_name(name: str) -> str:
    """The display form of an entity or relation name (see the module docstring)."""
    text = collapse(name)
    prev = None
    while prev != text:  # quotes and punctuation can nest: '"fox."' → fox
        prev = text
        text = text.lstrip(_LEADING).rstrip(_TRAILING).strip()
        if len(text) >= 2 and text[0] in "([{" and text[-1] in ")]}" and _balanced(text):
            text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    """True when the first bracket closes at the last character, e.g. "(fox)", not "(a) (b)"."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for i, ch in enumerate(text):
        if ch == text[0]:
            depth += 1
        elif ch == pairs[text[0]]:
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


def singular(word: str) -> str:
    """Trivial English plural → singular for one lower-case word ("attacks" → "attack").

    Deliberately conservative: it undoes regular -s/-es/-ies plurals, leaves words
    ending in -ss/-us/-is and a list of false plurals alone, and never touches words
    with digits or other non-letters.
    """
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) < 4 or not word.isalpha() or word in _NOT_PLURAL or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"  # allergies → allergy
    if word.endswith(("sses", "shes", "xes", "zzes")) or (
        word.endswith("ches") and not word.endswith("aches")  # churches, but headaches
    ):
        return word[:-2]
    if word.endswith(("ss", "us", "is")):
        return word  # glass, virus, diagnosis
    return word[:-1]


def entity_key(name: str) -> str:
    """The identity of an entity within a domain: case-, plural- and punctuation-folded.

    A leading article is dropped, and the last word is made singular unless the name
    spells it as an acronym ("AIDS").
    """
    display = clean_name(unicodedata.normalize("NFKC", name))
    words = display.split(" ")
    if len(words) > 1 and words[0].casefold() in _ARTICLES:
        words = words[1:]  # "the forest" is "forest"; the display name keeps its article
    if words[-1] and not (len(words[-1]) > 1 and words[-1].isupper()):
        words[-1] = singular(words[-1].casefold())
    return " ".join(w.casefold() for w in words).strip()


def relation_text(relation: str) -> str:
    """A relation (predicate) as stored: cleaned and lower-cased, not singularised."""
    return clean_name(unicodedata.normalize("NFKC", relation)).casefold()


def only_function_words(name: str) -> bool:
    """True when every word of `name` is a function word ("not", "it", "the one"): such a
    name is no entity. Single letters and numbers are content ("C", "vitamin B", "1900")."""
    words = [m.group(0).casefold() for m in _WORD.finditer(unicodedata.normalize("NFKC", name))]
    return bool(words) and all(w in _STOPWORDS for w in words)


def content_words(text: str) -> set[str]:
    """Lower-case singular words of `text` without stopwords (for concept matching)."""
    words = (m.group(0).casefold() for m in _WORD.finditer(unicodedata.normalize("NFKC", text)))
    return {singular(w) for w in words if w not in _STOPWORDS and len(w) > 1}


# ConceptNet 4's normal form drops these words (measured on conceptnet_en: each occurs in
# at most a few hundred of its 976k concept words, against "not" 3,067 and "up" 4,600).
CONCEPTNET_STOPWORDS = frozenset((
    "a", "an", "the", "to", "of", "in", "on", "at", "be", "is", "am", "are", "was", "were",
    "been", "it", "its", "for", "with", "and", "or", "from", "by", "into", "my", "your", "his",
    "her", "their", "our", "some", "this", "that", "these", "those", "you", "i", "he", "she",
    "they", "me", "him", "them", "us", "as", "than", "would", "should", "could", "such",
    "there", "which", "so", "very", "'s", "’s",
))


def concept_form(lemmas: list[str]) -> str:
    """ConceptNet 4's normal form of a phrase from its words' lemmas: lower case, stop
    words dropped ("revolving door" → lemmas "revolve door"; "go to bed" → "go bed"). Empty
    when nothing is left.

    >>> concept_form(["go", "to", "bed"])
    'go bed'
    """
    words = [w.casefold() for w in lemmas if w and w.casefold() not in CONCEPTNET_STOPWORDS]
    return " ".join(words)
