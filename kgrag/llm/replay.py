"""Replaying identical greedy requests within one evaluation run.

Several methods of a run often send the model the very same greedy request: every KG
method asks ExtractConcepts with the same prompt, and MetaKGRAG and its ablations often
end with the same evidence, hence the same answer prompt. Greedy decoding of one prompt
gives one reply, so `ReplayModel` answers a repeat with the first reply instead of
decoding it again.

What a replay still does, so results and costs read as if each method ran alone:
- the model's `UsageMeter` records the call (tokens, and the recorded seconds), and
  counts it under `replayed`;
- `kgrag.clock` is credited the recorded seconds, so stage and total times include it.

Only `chat` with temperature 0 and `next_token_logprobs` (one forward pass, no sampling)
are replayed. Sampling, hidden states, log-probability
loops and batched streams go to the model as they are.

`keep_in(path)` also keeps every reply in a SQLite file (`kgrag eval` keeps one per run
directory, `replay.sqlite`), so a run resumed in another session, or a method added to it
later, replays what the earlier processes decoded: the `llm` row's letter pass that the
evidence gate asks again, and the concepts every KG method extracts. Keys name the model.

Why it is not in a run's identity: in the committed runs, 95 of the 100 answer prompts
that two methods sent identically got the same reply from llama.cpp anyway; the other 5
were decoded in other sessions or after another prefix in the KV cache, and differ in
the explanation (one in the option chosen). A replay picks one of those decodings.

>>> from tests.doubles.scripted import ScriptedModel
>>> from kgrag.llm.base import GenerationParams, Message
>>> m = ReplayModel(ScriptedModel(["first", "second"]))
>>> ask = [Message("user", "hi")]
>>> [m.chat(ask, GenerationParams()).text for _ in range(2)], m.usage.calls, m.usage.replayed
(['first', 'first'], 2, 1)
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kgrag import clock
from kgrag.errors import KgragError
from kgrag.llm.base import (
    ChatModel,
    Generation,
    GenerationParams,
    Message,
    NextTokenScores,
    TokenLogprob,
    UsageMeter,
)

REPLAY_FILE = "replay.sqlite"


def request_key(messages: Sequence[Message], params: GenerationParams) -> str:
    """A digest of everything that decides a greedy reply."""
    data = {"messages": [[m.role, m.content] for m in messages], "params": asdict(params)}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


class ReplayModel:
    """A `ChatModel` that answers a repeated greedy `chat` request with its first reply."""

    def __init__(self, inner: ChatModel, max_entries: int = 20_000) -> None:
        self.inner = inner
        self.name, self.capabilities = inner.name, inner.capabilities
        self.usage: UsageMeter = inner.usage  # the same meter: one account per model
        self.max_entries = max_entries
        self._replies: OrderedDict[str, Generation] = OrderedDict()
        self._scores: OrderedDict[str, NextTokenScores] = OrderedDict()
        self._kept: ReplayFile | None = None

    def keep_in(self, path: Path) -> None:
        """From now on, also keep replies in (and read them from) the SQLite file `path`."""
        if self._kept is None or self._kept.path != path:
            self._kept = ReplayFile(path)

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        if params.temperature > 0:
            return self.inner.chat(messages, params)
        key = request_key(messages, params)
        g = self._replies.get(key)
        if g is None and self._kept is not None:
            g = self._kept.generation(self.name, key)
            if g is not None:
                self._replies[key] = g
        if g is None:
            g = self.inner.chat(messages, params)
            self._replies[key] = g
            if self._kept is not None:
                self._kept.put(self.name, key, "chat", _generation_json(g))
            if len(self._replies) > self.max_entries:
                self._replies.popitem(last=False)
            return g
        self._replies.move_to_end(key)
        self.usage.record(g, replayed=True)
        clock.credit(g.seconds)
        return g

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        """The letter scores of an identical earlier request (the `llm` row's pass that an
        evidence gate asks again), else the model's."""
        key = request_key([*messages, Message("assistant", prefill)],
                          GenerationParams(stop=tuple(candidates)))
        s = self._scores.get(key)
        if s is None and self._kept is not None:
            s = self._kept.scores(self.name, key)
            if s is not None:
                self._scores[key] = s
        if s is None:
            s = self.inner.next_token_logprobs(messages, candidates, prefill)
            self._scores[key] = s
            if self._kept is not None:
                self._kept.put(self.name, key, "scores", json.dumps(asdict(s)))
            if len(self._scores) > self.max_entries:
                self._scores.popitem(last=False)
            return s
        self._scores.move_to_end(key)
        self.usage.record(s.as_generation(), purpose="choose", replayed=True)
        clock.credit(s.seconds)
        return s

    def __getattr__(self, name: str) -> Any:  # sample, hidden_state, tokenize, …
        return getattr(self.inner, name)


class ReplayFile:
    """Replies kept on disk: one SQLite table keyed by (model, request key).

    Each reply is committed as it is written, so a process killed mid-run loses none."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # two `kgrag eval` of other methods may share a run's file: wait, do not fail
            self._db = sqlite3.connect(path, timeout=60)
            self._db.execute("CREATE TABLE IF NOT EXISTS replies (model TEXT, key TEXT, "
                             "kind TEXT, reply TEXT, PRIMARY KEY (model, key, kind))")
            self._db.commit()
        except sqlite3.DatabaseError as e:
            raise KgragError(f"the kept replies {path} are unreadable ({e})",
                             hint="delete the file: it is a cache, the run decodes again "
                             "what it needs") from None

    def put(self, model: str, key: str, kind: str, reply: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)",
                         (model, key, kind, reply))
        self._db.commit()

    def _get(self, model: str, key: str, kind: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT reply FROM replies WHERE model = ? AND key = ? AND"
                               " kind = ?", (model, key, kind)).fetchone()
        return json.loads(row[0]) if row else None

    def generation(self, model: str, key: str) -> Generation | None:
        d = self._get(model, key, "chat")
        if d is None:
            return None
        lps = d.pop("logprobs")
        if lps is not None:
            lps = tuple(TokenLogprob(t["token"], t["logprob"],
                                     tuple((a, b) for a, b in t["top"])) for t in lps)
        return Generation(**d, logprobs=lps)

    def scores(self, model: str, key: str) -> NextTokenScores | None:
        d = self._get(model, key, "scores")
        return NextTokenScores(**d) if d is not None else None


def _generation_json(g: Generation) -> str:
    return json.dumps(asdict(g))


def unwrapped(model: ChatModel) -> ChatModel:
    """The model under a `ReplayModel` (for code that needs the backend's own class)."""
    return model.inner if isinstance(model, ReplayModel) else model
