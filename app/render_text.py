"""Renderers for the text methods' traces: SeaKR's uncertainty and retrieval decisions,
candidate re-ranking, MetaRAG's and IM-RAG's rounds, and retrieved passages. Pure
functions, no Streamlit.

The text methods' traces are read by the data they carry, not by stage name, so a method
that records, for instance, `{"uncertainty": -5.1, "threshold": -6.0, "retrieve": true}`
in any step is drawn on the uncertainty chart. Unknown shapes still appear on the
Reasoning page as summary + JSON.

>>> rows = uncertainty_rows([TraceStep(stage="direct", summary="…",
...                                    data={"eigen_score": -5.2, "threshold": -6.0})])
>>> rows[0]["uncertainty"], rows[0]["above threshold"]
(-5.2, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgrag.types import TraceStep

UNCERTAINTY_KEYS = ("uncertainty", "eigen_score", "eigenscore")
THRESHOLD_KEYS = ("threshold", "eigen_threshold", "uncertainty_threshold")
DECISION_KEYS = ("decision", "retrieve", "retrieved", "action", "status")  # text first
CANDIDATE_KEYS = ("candidates", "docs", "documents")
CHOSEN_KEYS = ("chosen", "selected", "best", "choice")
ROUND_KEYS = ("monitor", "diagnosis", "plan", "action", "critique", "reflection")
ROUND_TEXT_KEYS = (*ROUND_KEYS, "query", "answer", "reason", "progress")  # + IM-RAG rounds
CANDIDATE_NUMBERS = ("rank", "score", "uncertainty")


def _first(data: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if k in data and data[k] is not None:
            return data[k]
    return None


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def uncertainty_rows(trace: Iterable[TraceStep]) -> list[dict[str, Any]]:
    """One row per step that reports an uncertainty: value, threshold, decision."""
    rows = []
    for i, s in enumerate(trace, 1):
        u = _number(_first(s.data, UNCERTAINTY_KEYS))
        if u is None:
            continue
        threshold = _number(_first(s.data, THRESHOLD_KEYS))
        decision = _first(s.data, DECISION_KEYS)
        rows.append({"step": int(s.data.get("step", i)) if isinstance(s.data.get("step"), int)
                     else i, "stage": s.stage, "uncertainty": u, "threshold": threshold,
                     "above threshold": None if threshold is None else u > threshold,
                     "decision": _decision_text(decision), "summary": s.summary})
    return rows


def _decision_text(d: Any) -> str:
    if isinstance(d, bool):
        return "retrieve" if d else "no retrieval"
    return "" if d is None else str(d)


def uncertainty_spec(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Vega-Lite: uncertainty per step (points coloured by decision) and the threshold."""
    points = [{"order": n, "step": f"{r['step']}·{r['stage']}", "uncertainty": r["uncertainty"],
               "decision": r["decision"] or "-"} for n, r in enumerate(rows)]
    layers: list[dict[str, Any]] = [{
        "data": {"values": points},
        "mark": {"type": "line", "point": {"size": 70}},
        "encoding": {"x": {"field": "step", "type": "ordinal", "sort": None, "title": "step",
                           "axis": {"labelAngle": 0}},
                     "y": {"field": "uncertainty", "type": "quantitative",
                           "title": "uncertainty U", "scale": {"zero": False}}},
    }, {
        "data": {"values": points}, "mark": {"type": "point", "filled": True, "size": 90},
        "encoding": {"x": {"field": "step", "type": "ordinal", "sort": None},
                     "y": {"field": "uncertainty", "type": "quantitative"},
                     "color": {"field": "decision", "type": "nominal",
                               "scale": {"range": ["#2b8a3e", "#e8590c", "#1c7ed6", "#868e96"]}}},
    }]
    thresholds = {r["threshold"] for r in rows if r["threshold"] is not None}
    if len(thresholds) == 1:
        layers.append({"data": {"values": [{"threshold": thresholds.pop()}]},
                       "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#e03131"},
                       "encoding": {"y": {"field": "threshold", "type": "quantitative"}}})
    return {"height": 220, "layer": layers}


def candidate_sets(trace: Iterable[TraceStep]) -> list[dict[str, Any]]:
    """Steps that chose among candidates (re-ranking): the candidates and the choice."""
    out = []
    for i, s in enumerate(trace, 1):
        cands = _first(s.data, CANDIDATE_KEYS)
        if not isinstance(cands, list) or not cands:
            continue
        chosen = _first(s.data, CHOSEN_KEYS)
        rows = []
        for j, c in enumerate(cands):
            m = c if isinstance(c, Mapping) else {}
            text = str(m.get("title") or m.get("text") or m.get("id") or c) if m else str(c)
            row: dict[str, Any] = {"#": j + 1, "candidate": text,
                                   "chosen": _is_chosen(chosen, j, c, text)}
            row.update({k: _number(m[k]) for k in CANDIDATE_NUMBERS if _number(m.get(k))
                        is not None})
            if isinstance(m.get("step"), str):  # SeaKR: the step generated with this passage
                row["continuation"] = m["step"]
            rows.append(row)
        out.append({"step": i, "stage": s.stage, "summary": s.summary, "rows": rows})
    return out


def _is_chosen(chosen: Any, index: int, cand: Any, text: str) -> bool:
    if chosen is None:
        return bool(cand.get("chosen")) if isinstance(cand, Mapping) else False
    if isinstance(chosen, int) and not isinstance(chosen, bool):
        return chosen == index
    if isinstance(chosen, list):
        return any(_is_chosen(c, index, cand, text) for c in chosen)
    return str(chosen) == text or (isinstance(cand, Mapping) and str(chosen) == str(
        cand.get("id")))


def rounds(trace: Iterable[TraceStep]) -> list[dict[str, Any]]:
    """MetaRAG-style rounds: steps with a monitor verdict, diagnosis or plan, and the other
    steps of a numbered round (its answer, its stop), in trace order."""
    steps = list(trace)
    if not any(k in s.data for s in steps for k in ROUND_KEYS):
        return []
    out = []
    for i, s in enumerate(steps, 1):
        rnd = s.data.get("round")
        has_round = isinstance(rnd, int) and not isinstance(rnd, bool)
        if not has_round and not any(k in s.data for k in ROUND_KEYS):
            continue
        texts = {k: _as_text(s.data[k]) if s.data.get(k) not in (None, "", [], {}) else None
                 for k in ROUND_TEXT_KEYS}
        out.append({"round": rnd if has_round else None, "step": i, "stage": s.stage,
                    "summary": s.summary, **texts})
    used = [k for k in ROUND_TEXT_KEYS if any(r[k] is not None for r in out)]
    return [{k: v for k, v in r.items() if k not in ROUND_TEXT_KEYS or k in used} for r in out]


def _as_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "; ".join(_as_text(x) for x in v)
    if isinstance(v, Mapping):
        return "; ".join(f"{k}: {_as_text(x)}" for k, x in v.items())
    return str(v)


def passages(trace: Iterable[TraceStep]) -> list[dict[str, Any]]:
    """Retrieval steps (textrag's `RetrievalLog`): query and the passages' titles, scores."""
    rows = []
    for i, s in enumerate(trace, 1):
        titles, query = s.data.get("titles"), s.data.get("query")
        if not isinstance(titles, list) or query is None:
            continue
        scores = s.data.get("scores") or [None] * len(titles)
        for rank, (title, score) in enumerate(zip(titles, scores, strict=False), 1):
            rows.append({"step": i, "stage": s.stage, "query": str(query), "rank": rank,
                         "title": str(title), "score": _number(score)})
    return rows
