"""Trace renderers: pure functions from a method's trace to DOT, Markdown, chart specs and
table rows. No Streamlit here, so every function is unit-tested on its own; the pages only
place what these return.

MetaKGRAG's "refine" steps are read back into the method's own trace model
(`metakg.trace.RefinementView`), its "evidence" step by key; kg-paths' and kg-fused's
"paths" and "choose" steps are read by `app.render_options`. A step that does not
validate, or a stage no renderer knows, is shown generically: its summary and its data
as JSON.

    view = refinements(prediction.trace)[0]
    stages = refinement_stages(view)
    stages[0].title, stages[0].dot.startswith("digraph")
    # -> ('initial path', True)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.render_options import is_triple, is_triples, option_rows
from kgrag.types import TraceStep
from metakg.provenance import SourceSentence, render_passage

log = logging.getLogger(__name__)

try:  # the method's own trace models, when the MetaKGRAG package is present
    from metakg.trace import RefinementView
except ImportError:  # pragma: no cover - the app still shows every trace generically
    RefinementView = None  # type: ignore[assignment,misc]

# Colours of the path graphs (also explained in the legend under each graph).
START, PIVOT, MISLEADING, BOOSTED, PLAIN = "#a5d8ff", "#ffd8a8", "#ffc9c9", "#b2f2bb", "#f1f3f5"
NEW_EDGE, OLD_EDGE = "#1c7ed6", "#adb5bd"
LEGEND = ("blue: start entity · orange: pivot (restart entity) · red: misleading (low global "
          "support) · green: +δ boosted · blue edges: the re-searched path · grey dashed: "
          "dropped by the restart · labels: w (original) → w + adjustment")
ADJUSTMENTS_SHOWN = 12  # a cycle may boost dozens of entities; the note names the first
_MD_SPECIAL = "\\`*_{}[]<>()#+-.!|~$"


# ---------------------------------------------------------------------- text helpers
def escape_md(text: str) -> str:
    """Text shown literally by Markdown (model output may contain `*`, `#`, `$`, HTML)."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in text)


def dot_string(text: str) -> str:
    """A double-quoted DOT string; backslashes and quotes escaped, newlines kept."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def short(text: str, n: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass(frozen=True)
class GenericStep:
    """Any trace step: stage, summary, seconds and its data as pretty JSON."""

    stage: str
    summary: str
    seconds: float
    data_json: str


def generic_step(step: TraceStep) -> GenericStep:
    data = json.dumps(step.data, indent=2, ensure_ascii=False, default=str)
    return GenericStep(step.stage, step.summary, step.seconds, data)


# ---------------------------------------------------------------------- MetaKGRAG reading
def _validated(model: Any, data: Mapping[str, Any]) -> Any | None:
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValueError as e:  # a newer or older trace layout: shown generically instead
        log.info("trace step does not match %s: %s", getattr(model, "__name__", model), e)
        return None


def refinements(trace: Iterable[TraceStep]) -> list[Any]:
    """The `RefinementView` of every "refine" step (one per start entity)."""
    views = [_validated(RefinementView, s.data) for s in trace if s.stage == "refine"]
    return [v for v in views if v is not None]


@dataclass(frozen=True)
class Evidence:
    """The integrated evidence of a KG method's "evidence" step (read by key, leniently:
    only `triples` and `lines` are needed)."""

    triples: list[list[str]]
    lines: list[str]
    retrieval_ms: float | None = None


def with_source_sentences(lines: list[str], sources: object) -> list[str]:
    """Each evidence line followed by the sentence of its chunk that backs it, where the
    trace names one (`metakg.provenance`: {fact, chunk, sentence}, fact 1-based); with the
    passage unit, the source passages after the lines, each naming the facts it backs.

    >>> with_source_sentences(["Evidence 1: a r b"], [{"fact": 1, "sentence": "A r B."}])
    ['Evidence 1: a r b — source: "A r B."']
    >>> with_source_sentences(["Evidence 1: a r b"], [{"fact": 1, "chunk": "c", "facts": [1],
    ...                                                "sentence": "A r B.", "title": "A"}])
    ['Evidence 1: a r b', 'Source passage 1 (backs evidence 1) — A: A r B.']
    """
    if not isinstance(sources, list):
        return lines
    try:
        passages = [SourceSentence.model_validate(x) for x in sources
                    if isinstance(x, dict) and x.get("facts")]
    except ValidationError:
        passages = []
    if passages:  # the passage unit: the passages after the evidence, as the prompt had them
        return [*lines, *(render_passage(k, x) for k, x in enumerate(passages, 1))]
    by_fact = {int(x["fact"]): str(x["sentence"]) for x in sources
               if isinstance(x, dict) and isinstance(x.get("fact"), int) and x.get("sentence")}
    return [f'{line} — source: "{by_fact[i]}"' if i in by_fact else line
            for i, line in enumerate(lines, 1)]


def evidence_view(trace: Iterable[TraceStep]) -> Evidence | None:
    """The "evidence" step's triples and lines, if there is such a step."""
    for s in trace:
        if s.stage != "evidence":
            continue
        triples, lines = s.data.get("triples"), s.data.get("lines")
        if not isinstance(triples, list) or not isinstance(lines, list) or (
                triples and not is_triples(triples)):
            return None
        ms = s.data.get("retrieval_ms")
        return Evidence([list(map(str, t)) for t in triples],
                        with_source_sentences([str(x) for x in lines], s.data.get("sources")),
                        float(ms) if isinstance(ms, int | float) else None)
    return None


def known_stages(trace: Sequence[TraceStep]) -> set[int]:
    """Indexes of the steps the Reasoning page renders specially (the rest: generically)."""
    def drawn(s: TraceStep) -> bool:
        if s.stage == "refine":
            return bool(refinements([s]))
        if s.stage == "paths":
            return bool(option_rows([s]))
        return s.stage == "evidence" and evidence_view([s]) is not None

    return {i for i, s in enumerate(trace) if drawn(s)}


def concepts(trace: Iterable[TraceStep]) -> list[str]:
    for s in trace:
        if s.stage == "concepts":
            return [str(c) for c in s.data.get("concepts", [])]
    return []


def matches(trace: Iterable[TraceStep]) -> list[dict[str, Any]]:
    """MatchEntities rows: concept, nearest entity, similarity, kept as a start entity."""
    for s in trace:
        if s.stage == "match":
            return [{"concept": m.get("concept"), "entity": m.get("name") or m.get("key"),
                     "key": m.get("key"), "similarity": m.get("similarity"),
                     "start entity": bool(m.get("kept"))}
                    for m in s.data.get("matches", []) if isinstance(m, Mapping)]
    return []


def trace_domain(trace: Iterable[TraceStep], default: str | None) -> str | None:
    for s in trace:
        if s.stage == "domain" and isinstance(s.data.get("domain"), str):
            return s.data["domain"]
    return default


# ---------------------------------------------------------------------- path graphs
@dataclass(frozen=True)
class PathStage:
    """One view of a start entity's refinement: the initial path, a cycle, or the final."""

    title: str
    dot: str
    triples: list[list[str]]  # the path shown (the new path of a cycle), for Browser links
    cycle: Any | None = None  # the CycleView, for its coverage chart and diagnosis
    notes: list[str] = field(default_factory=list)


def path_dot(path: Any, names: Mapping[str, str], *, old: Any | None = None,
             cycle: Any | None = None) -> str:
    """DOT of a path (a `PathView`), left to right in walking order.

    With `old` and `cycle`: the path the cycle evaluated, marked with its diagnosis (pivot,
    misleading entities, boosted entities), and the re-searched `path` drawn over it.
    """
    keys = list(dict.fromkeys([*(old.entities if old else []), *path.entities]))
    ids = {k: f"e{i}" for i, k in enumerate(keys)}
    lines = ["digraph path {", '  rankdir=LR; bgcolor="transparent"; nodesep=0.3;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for k in keys:
        lines.append(f"  {ids[k]} [{_node_attrs(k, names, path, cycle)}];")
    new_hops = {_hop_key(h) for h in path.hops}
    old_hops = {_hop_key(h) for h in old.hops} if old else set()
    for walk, drawn_old in ((path, False), (old, True)):
        if walk is None:
            continue
        prev = walk.start
        for hop in walk.hops:
            key = _hop_key(hop)
            if drawn_old and key in new_hops:
                prev = hop.target
                continue
            style = _edge_style(in_new=key in new_hops, in_old=key in old_hops, compare=bool(old))
            lines.append(f"  {ids[prev]} -> {ids[hop.target]} [{_edge_attrs(hop, prev, style)}];")
            prev = hop.target
    if cycle is not None and cycle.missing:
        text = "missing concepts:\n" + "\n".join(
            f"{c} ({cycle.coverage.get(c, 0.0):.2f})" for c in cycle.missing)
        lines.append(f'  missing [shape=note, style=filled, fillcolor="#fff3bf", fontsize=9, '
                     f"label={dot_string(text)}];")
    lines.append("}")
    return "\n".join(lines)


def _hop_key(hop: Any) -> tuple[str, ...]:
    return tuple(hop.triple)


def _node_attrs(key: str, names: Mapping[str, str], path: Any, cycle: Any | None) -> str:
    name = names.get(key, key)
    label, fill, tip = [name], PLAIN, [f"key: {key}"]
    if key == path.start:
        fill = START
    if cycle is not None:
        if key in cycle.support:
            tip.append(f"global support {cycle.support[key]:.2f}")
        if key in cycle.misleading:
            fill = MISLEADING
            label.append(f"misleading · GS {cycle.misleading[key]:.2f}")
        adj = cycle.adjustments.get(key)
        if adj is not None and adj > 0 and key in path.entities:
            fill = BOOSTED
            label.append(f"+δ {adj:+.2f}")
        if key == cycle.pivot:
            fill = PIVOT
            label.append("pivot" + (f" · f={cycle.pivot_score:.2f}"
                                    if cycle.pivot_score is not None else ""))
    penwidth = 2 if key == path.start else 1
    return (f"label={dot_string(chr(10).join(label))}, fillcolor={dot_string(fill)}, "
            f"tooltip={dot_string(chr(10).join([name, *tip]))}, penwidth={penwidth}")


def _edge_style(*, in_new: bool, in_old: bool, compare: bool) -> str:
    if not compare:
        return "plain"
    if in_new and not in_old:
        return "new"
    return "kept" if in_new else "dropped"


def _edge_attrs(hop: Any, prev: str, style: str) -> str:
    head, predicate, _ = hop.triple
    backwards = head != prev  # walked against the stored direction
    weight = (f"w {hop.weight:.2f}" if abs(hop.adjusted - hop.weight) < 1e-9
              else f"w {hop.weight:.2f} → {hop.adjusted:.2f}")
    attrs = [f"label={dot_string(predicate + chr(10) + weight)}",
             f"tooltip={dot_string(hop.text)}"]
    if backwards:
        attrs.append("dir=back")
    if style == "new":
        attrs.append(f'color="{NEW_EDGE}", penwidth=2.2')
    elif style == "dropped":
        attrs.append(f'color="{OLD_EDGE}", style=dashed, fontcolor="{OLD_EDGE}"')
    return ", ".join(attrs)


def path_triples(path: Any) -> list[list[str]]:
    return [list(h.triple) for h in path.hops]


def refinement_stages(ref: Any) -> list[PathStage]:
    """The views of one start entity: initial path, each cycle, and (if changed) final."""
    stages = [PathStage("initial path", path_dot(ref.initial, ref.names),
                        path_triples(ref.initial))]
    current = ref.initial
    for c in ref.cycles:
        notes = _cycle_notes(c)
        if c.new_path is None:  # no issue: the path was kept
            stages.append(PathStage(f"cycle {c.iteration}", path_dot(current, ref.names, cycle=c),
                                    path_triples(current), c, notes))
            continue
        stages.append(PathStage(f"cycle {c.iteration}",
                                path_dot(c.new_path, ref.names, old=current, cycle=c),
                                path_triples(c.new_path), c, notes))
        if c.accepted:
            current = c.new_path
    if ref.changed:
        stages.append(PathStage("final path", path_dot(ref.final, ref.names),
                                path_triples(ref.final),
                                notes=[f"stopped: {ref.stop}"]))
    return stages


def _cycle_notes(c: Any) -> list[str]:
    notes = []
    if c.missing:
        notes.append("missing concepts: " + ", ".join(c.missing))
    if c.misleading:
        notes.append("misleading entities: " + ", ".join(
            f"{k} (GS {v:.2f})" for k, v in c.misleading.items()))
    if c.issue:
        notes.append(f"issue acted on: {c.issue}; pivot {c.pivot}")
    if c.adjustments:
        ranked = sorted(c.adjustments.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
        more = len(ranked) - ADJUSTMENTS_SHOWN
        notes.append(f"adjusted weights ({len(ranked)}): " + ", ".join(
            f"{k} {v:+.2f}" for k, v in ranked[:ADJUSTMENTS_SHOWN])
            + (f", … and {more} more" if more > 0 else ""))
    if c.similarity is not None:
        verdict = "accepted" if c.accepted else "rejected (too similar), old path kept"
        notes.append(f"path similarity {c.similarity:.2f}: {verdict}")
    if not (c.missing or c.misleading):
        notes.append("no issue found: the path is kept")
    return notes


def coverage_spec(coverage: Mapping[str, float], tau: float) -> dict[str, Any]:
    """A Vega-Lite bar chart of Coverage(c) per concept with the τ_coverage rule."""
    rows = [{"concept": c, "coverage": round(float(v), 4), "covered": v >= tau}
            for c, v in coverage.items()]
    low = min([0.0, *(float(v) for v in coverage.values())])  # cosines can be negative
    return {
        "height": {"step": 26},  # one band per concept, every label shown
        "layer": [
            {"data": {"values": rows}, "mark": {"type": "bar"},
             "encoding": {
                 "y": {"field": "concept", "type": "nominal", "sort": None, "title": None,
                       "axis": {"labelOverlap": False, "labelLimit": 220}},
                 "x": {"field": "coverage", "type": "quantitative", "title": "Coverage(c)",
                       "scale": {"domain": [low, 1]}},
                 "color": {"field": "covered", "type": "nominal",
                           "scale": {"domain": [True, False], "range": ["#40c057", "#fa5252"]},
                           "legend": None}}},
            {"data": {"values": [{"tau": tau}]}, "mark": {"type": "rule", "strokeDash": [4, 3]},
             "encoding": {"x": {"field": "tau", "type": "quantitative", "title": "Coverage(c)"}}},
        ],
    }


def neighbourhood_dot(center: str, facts: Sequence[Mapping[str, Any]]) -> str:
    """DOT of an entity's facts (rows of `browser/entity_neighbourhood`): stored directions."""
    names = {center: center}
    for f in facts:
        names.setdefault(str(f["head"]), str(f.get("head_name") or f["head"]))
        names.setdefault(str(f["tail"]), str(f.get("tail_name") or f["tail"]))
    ids = {k: f"n{i}" for i, k in enumerate(names)}
    lines = ["digraph neighbourhood {", '  rankdir=LR; bgcolor="transparent";',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
             f'fillcolor="{PLAIN}"];', '  edge [fontname="Helvetica", fontsize=9];']
    for k, name in names.items():
        extra = f', fillcolor="{START}", penwidth=2' if k == center else ""
        lines.append(f"  {ids[k]} [label={dot_string(name)}, "
                     f"tooltip={dot_string('key: ' + k)}{extra}];")
    for f in facts:
        lines.append(f"  {ids[str(f['head'])]} -> {ids[str(f['tail'])]} "
                     f"[label={dot_string(str(f['predicate']))}];")
    lines.append("}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- evidence sets
def triple_sets(step: TraceStep) -> list[tuple[str, list[list[str]]]]:
    """Evidence sets a step carries, whatever the method: `triples` ([[h, r, t], ...]),
    `paths` ([[[h, r, t], ...], ...]) or `facts` ([{"triple": [h, r, t]}, ...])."""
    out: list[tuple[str, list[list[str]]]] = []
    data = step.data
    if is_triples(data.get("triples")):
        out.append((step.stage, [list(map(str, t)) for t in data["triples"]]))
    paths = data.get("paths")
    if isinstance(paths, list) and paths and all(is_triples(p) for p in paths):
        out += [(f"{step.stage} path {i}", [list(map(str, t)) for t in p])
                for i, p in enumerate(paths, 1) if p]
    facts = data.get("facts")
    if isinstance(facts, list) and facts and all(
            isinstance(f, Mapping) and is_triple(f.get("triple")) for f in facts):
        out.append((step.stage, [list(map(str, f["triple"])) for f in facts]))
    return out
