"""Benchmark of SeaKR's cost: one uncertainty estimate against one greedy generation.

The issue's figure: a SeaKR step with U(c) (the greedy step plus k = 20 samples with
their EOS hidden states, batched in one llama.cpp context) against the greedy step alone,
on the same prompt (the first step of a multi-hop question, 10 exemplars). The exemplar
prefix is decoded once in a warm-up, as in a real run where every prompt shares it; the
EOS-vector cache is emptied before every run, so no vector is served from an earlier
run. Each run times both, interleaved; the table reports wall and CPU seconds of this
process (CPU time is less disturbed by other jobs on a shared machine). `sequential`
adds the unbatched reference: the k samples as k separate one-sample calls.

Numbers for the README come from here (`kgrag bench seakr`), never from timed tests.

    bench_seakr(Platform(), Console(), runs=3)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from kgrag.errors import ModelError
from kgrag.llm.base import require
from kgrag.platform import Platform
from textrag.seakr.method import BASE_STOPS, SeaKR, SeakrConfig, exemplar_prefix, render_prompt
from textrag.seakr.uncertainty import LlamaSeakrEngine, StepOutput

# Written for the benchmark; not from any dataset (no evaluation question is timed here).
QUESTION = "Who directed the film that won the Academy Award for Best Picture in 1998?"
STEP_STOPS = (*BASE_STOPS, ". ")  # SeaKR's first step: one sentence
T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


@dataclass
class SeakrBench:
    model: str
    k: int
    greedy: list[Timing] = field(default_factory=list)
    uncertainty: list[Timing] = field(default_factory=list)
    sequential: list[Timing] = field(default_factory=list)

    @staticmethod
    def median(ts: list[Timing], cpu: bool = False) -> float:
        return statistics.median(t.cpu if cpu else t.wall for t in ts)

    def ratio(self, cpu: bool = False) -> float:
        """Median cost of a step with U over the median greedy step."""
        return self.median(self.uncertainty, cpu) / self.median(self.greedy, cpu)


def _timed(call: Callable[[], T]) -> tuple[T, Timing]:
    c0, w0 = time.process_time(), time.perf_counter()
    result = call()
    return result, Timing(time.perf_counter() - w0, time.process_time() - c0)


def bench_seakr(p: Platform, console: Console, runs: int = 3, k: int = 20,
                sequential: bool = False) -> SeakrBench:
    """Time the greedy step and the step with U(c) `runs` times each and print both."""
    from kgrag.llm.eos_cache import EosStateCache
    from kgrag.llm.llama import LlamaCppModel

    model = p.chat_model
    require(model, SeaKR.needs, "the SeaKR benchmark")
    if not isinstance(model, LlamaCppModel):
        raise ModelError(f"the SeaKR benchmark measures the batched llama.cpp engine, not "
                         f"{model.name!r}", hint="use KGRAG_MODEL__BACKEND=llama")
    cfg = SeakrConfig()
    engine = LlamaSeakrEngine(model, replace(cfg.uncertainty, k=k),
                              prefix=exemplar_prefix(cfg.n_shot))
    prompt = render_prompt(QUESTION, [], [], cfg.n_shot)
    engine.generate(prompt, STEP_STOPS, uncertainty=False)  # warm-up: exemplar KV cells
    result = SeakrBench(model.name, k)
    for run in range(1, runs + 1):
        engine.cache = EosStateCache()  # every run computes its own EOS vectors
        greedy, g = _timed(lambda: engine.generate(prompt, STEP_STOPS, uncertainty=False))
        full, u = _timed(lambda: engine.generate(prompt, STEP_STOPS, uncertainty=True))
        result.greedy.append(g)
        result.uncertainty.append(u)
        console.print(_run_line(run, greedy, g, full, u))
        if sequential:
            result.sequential.append(_sequential(engine, prompt, k))
            console.print(f"  {k} samples one at a time: {result.sequential[-1].wall:.2f} s "
                          f"wall, {result.sequential[-1].cpu:.2f} s CPU")
    _print_summary(console, result, model, engine)
    return result


def _run_line(run: int, greedy: StepOutput, g: Timing, full: StepOutput, u: Timing) -> str:
    return (f"run {run}: greedy {g.wall:.2f} s wall / {g.cpu:.2f} s CPU "
            f"({greedy.text.strip()!r}); with U: {u.wall:.2f} s / {u.cpu:.2f} s, "
            f"U = {full.uncertainty:.3f} over {full.vectors_used} samples "
            f"({len(set(full.samples))} distinct) → {u.wall / g.wall:.2f}x wall, "
            f"{u.cpu / g.cpu:.2f}x CPU")


def _sequential(engine: LlamaSeakrEngine, prompt: str, k: int) -> Timing:
    """The k samples with EOS states as k separate calls (other seeds), no greedy."""
    from kgrag.llm.eos_states import sample_with_eos_states

    tokens, prefix_len = engine._tokens(prompt)
    params = engine.config.sampling(STEP_STOPS, engine.config.max_tokens)

    def one_by_one() -> None:
        for i in range(k):
            sample_with_eos_states(engine.model, tokens, 1, params, seed=engine.config.seed + i,
                                   tensor=engine.tensor_name, greedy=False,
                                   prefix_len=prefix_len, prefix=engine._prefix_state)

    return _timed(one_by_one)[1]


def _print_summary(console: Console, r: SeakrBench, model: object, engine: LlamaSeakrEngine
                   ) -> None:
    table = Table("measure", "median wall s", "median CPU s", "runs")
    table.add_row("greedy step", f"{r.median(r.greedy):.2f}", f"{r.median(r.greedy, True):.2f}",
                  str(len(r.greedy)))
    table.add_row(f"step with U (greedy + {r.k} batched samples)",
                  f"{r.median(r.uncertainty):.2f}", f"{r.median(r.uncertainty, True):.2f}",
                  str(len(r.uncertainty)))
    if r.sequential:
        table.add_row(f"{r.k} samples one at a time", f"{r.median(r.sequential):.2f}",
                      f"{r.median(r.sequential, True):.2f}", str(len(r.sequential)))
    console.print(table)
    threads = getattr(getattr(model, "llm", None), "n_threads", None)
    console.print(f"{r.model}: uncertainty estimate / greedy generation = "
                  f"{r.ratio():.2f}x wall, {r.ratio(cpu=True):.2f}x CPU (aim ≤ 3x); "
                  f"k={r.k}, tensor {engine.tensor_name}, max {engine.config.max_tokens} "
                  f"tokens, threads={threads}")
