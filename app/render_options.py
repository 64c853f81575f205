"""kg-paths' and kg-fused's choice per option, from the trace `metakg.kg_paths` records:
one table row per option (reader probability, graph score, final probability, chosen),
the question entities, kg-fused's fusion weight and each option's paths as readable text.
Pure functions, no Streamlit.

Read by key and leniently: the last "paths" step (seeds; per option its entities, score
and shown paths) and the "choose" step after it (final probabilities and label; kg-fused
adds "reader", "graph" and "weight"). kg-fused's "reader" step, before the paths, is not
read. Without a well-formed "paths" step (another method, an older layout): no rows.

    rows = option_rows(prediction.trace, {c.label: c.text for c in question.choices})
    rows[0]["option"], rows[0]["final p"], rows[0]["chosen"]
    # -> ('A', 0.5366, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from kgrag.types import TraceStep

_ARROW = re.compile(r"\s*(<)?-\[([^\]]*)\]-(>)?\s*")


# ---------------------------------------------------------------------- trace shapes
def is_triple(t: Any) -> bool:
    """A [head, relation, tail] of strings, as a list or a tuple (`app.render` reads
    evidence sets with it too)."""
    return isinstance(t, list | tuple) and len(t) == 3 and all(isinstance(x, str) for x in t)


def is_triples(ts: Any) -> bool:
    """A non-empty list of triples (`is_triple`)."""
    return isinstance(ts, list) and bool(ts) and all(is_triple(t) for t in ts)


def _number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _numbers(x: Any) -> dict[str, float]:
    if not isinstance(x, Mapping):
        return {}
    return {str(k): float(v) for k, v in x.items() if _number(v)}


# ---------------------------------------------------------------------- options
def _path_step(trace: Sequence[TraceStep]) -> tuple[int, dict[str, Mapping[str, Any]]] | None:
    """The last "paths" step (`metakg.kg_paths`): its index and its options by label."""
    for i in range(len(trace) - 1, -1, -1):
        if trace[i].stage != "paths":
            continue
        options = trace[i].data.get("options")
        if not isinstance(options, Mapping) or not options or not all(
                isinstance(o, Mapping) for o in options.values()):
            return None
        return i, {str(k): o for k, o in options.items()}
    return None


def _choice_after(trace: Sequence[TraceStep], index: int) -> Mapping[str, Any]:
    """The data of the "choose" step that follows the paths (kg-fused's reader step comes
    before them, under its own stage name)."""
    return next((s.data for s in trace[index + 1:] if s.stage == "choose"), {})


def option_rows(trace: Sequence[TraceStep], choices: Mapping[str, str] | None = None
                ) -> list[dict[str, Any]]:
    """kg-paths' and kg-fused's choice, one row per option: its text (from `choices`), the
    reader's probability (kg-fused only, else None), the graph's log-linear score, the
    final probability (kg-fused: the fused one; kg-paths: the softmax of the scores), the
    number of its paths the trace shows (the method keeps a few per option) and whether it
    was chosen. Empty without a well-formed "paths" step (another method, or a trace of
    an older layout).

    >>> step = TraceStep(stage="paths", summary="", data={"seeds": ["fox"], "options": {
    ...     "A": {"entities": ["forest"], "score": 1.5, "paths": ["fox -[AtLocation]-> forest"]}}})
    >>> choose = TraceStep(stage="choose", summary="", data={"label": "A", "letters": {"A": 1.0}})
    >>> [(r["option"], r["graph score"], r["final p"], r["paths shown"], r["chosen"])
    ...  for r in option_rows([step, choose])]
    [('A', 1.5, 1.0, 1, True)]
    """
    found = _path_step(trace)
    if found is None:
        return []
    index, options = found
    choose = _choice_after(trace, index)
    reader, final = _numbers(choose.get("reader")), _numbers(choose.get("letters"))
    graph = _numbers(choose.get("graph"))
    rows = []
    for label in dict.fromkeys([*options, *final]):
        o = options.get(label, {})
        score, paths = o.get("score"), o.get("paths")
        rows.append({"option": label, "text": (choices or {}).get(label, ""),
                     "reader p": reader.get(label),
                     "graph score": float(score) if _number(score) else graph.get(label),
                     "final p": final.get(label),
                     "paths shown": len(paths) if isinstance(paths, list) else 0,
                     "chosen": label == choose.get("label")})
    return rows


def fusion_weight(trace: Sequence[TraceStep]) -> float | None:
    """kg-fused's λ in log p ∝ log p_reader + λ·score (None for kg-paths, or no such step)."""
    found = _path_step(trace)
    weight = _choice_after(trace, found[0]).get("weight") if found else None
    return float(weight) if _number(weight) else None


def path_seeds(trace: Sequence[TraceStep]) -> list[str]:
    """The question entities the "paths" step's paths start from."""
    found = _path_step(trace)
    seeds = trace[found[0]].data.get("seeds") if found else None
    return [str(s) for s in seeds] if isinstance(seeds, list) else []


def readable_path(path: Any) -> str:
    """One path as text, relations on the arrows: a shown path
    (`metakg.path_features.shown_paths`) or a list of [head, relation, tail] triples.

    >>> readable_path("fox -[AtLocation]-> forest")
    'fox —AtLocation→ forest'
    >>> readable_path([["fox", "IsA", "animal"], ["oven", "AtLocation", "animal"]])
    'fox —IsA→ animal ←AtLocation— oven'
    """
    if isinstance(path, str):
        return _ARROW.sub(lambda m: f" ←{m[2]}— " if m[1] else f" —{m[2]}→ " if m[3]
                          else f" —{m[2]}— ", path)
    if is_triples(path):
        last, text = path[0][0], path[0][0]
        for head, rel, tail in path:
            if head == last:
                text, last = f"{text} —{rel}→ {tail}", tail
            elif tail == last:  # walked against the stored direction
                text, last = f"{text} ←{rel}— {head}", head
            else:
                text, last = f"{text}; {head} —{rel}→ {tail}", tail
        return text
    return str(path)


def option_paths(trace: Sequence[TraceStep]) -> list[tuple[str, list[str]]]:
    """Each option's label and its paths as readable text (`readable_path`); empty without
    a well-formed "paths" step."""
    found = _path_step(trace)
    if found is None:
        return []
    out = []
    for label, o in found[1].items():
        paths = o.get("paths")
        out.append((label, [readable_path(p) for p in paths] if isinstance(paths, list) else []))
    return out
