#!/usr/bin/env bash
# The dev300 accuracy tables: every method on the same questions, grown in steps.
#
#   scripts/dev300.sh kg   [N] [STEP]   CommonsenseQA, MedQA, MMLU law over the domain graphs:
#                                       llm, cot, kg-vanilla, tog, metakgrag and its four
#                                       ablations (MetaKGRAG's Tables 2, 4 and 6)
#   scripts/dev300.sh text [N] [STEP]   HotpotQA and 2Wiki, open-domain: cot, rag, ircot,
#                                       flare, seakr, metarag (SeaKR's Table 1)
#   scripts/dev300.sh reader [N] [STEP] CommonsenseQA, MedQA, MMLU law with the letter reader
#                                       and a PriDe prior per answer prompt (`kgrag reader
#                                       prior`, with and without `--prompt answer_choose`,
#                                       and `kgrag reader trust --bias prompt-prior` first)
#                                       over the full graphs: llm, kg-no-evidence,
#                                       kg-vanilla, metakgrag-oa (ours), metakgrag, its four
#                                       ablations, tog (issue 43's tables), into the
#                                       committed runs docs/results/reader-<dataset>-pp.
#                                       BIAS=prior continues the earlier runs (one prior for
#                                       every prompt): reader-csqa-kgfull and
#                                       reader-{medqa,mmlu-law}-dev300
#   scripts/dev300.sh compare [N] [STEP] HotpotQA and 2Wiki over the full Wikipedia graph:
#                                       kg-vanilla, metakgrag, tog, kg-ppr, into the
#                                       committed text runs docs/results/<dataset>-dev
#                                       (issue 42's tables, beside the text rows)
#   scripts/dev300.sh medquad [N] [STEP] MedQuAD's open-ended rows llm, cot, rag,
#                                       kg-vanilla, metakgrag, kg-ppr over the medical
#                                       graph and the MedQuAD corpus, into
#                                       docs/results/medquad-dev300, scored with ROUGE-L,
#                                       BERTScore and G-Eval (the chat model judges).
#                                       JUDGE=apart leaves the scoring to a second lane:
#   scripts/dev300.sh medquad-judge [N] Scores docs/results/medquad-dev300 (ROUGE-L,
#                                       BERTScore, G-Eval) again and again while another
#                                       process answers (`JUDGE=apart scripts/dev300.sh
#                                       medquad`), until every row's first N answers are
#                                       judged. Measured (`seconds` of geval.jsonl, 1
#                                       llama.cpp thread, MedQuAD dev300 run): a
#                                       G-Eval record 7.7-8.7 s median, 190-225 s for a
#                                       question's six answers, against 220-264 s to
#                                       answer them, so the two lanes are about even. The
#                                       judge reads only questions every row has answered
#                                       (`--geval-complete`): a question's answers judged
#                                       together share its prompt in the KV cache. The
#                                       rows can also be split over lanes (one `kgrag
#                                       eval` per method may write into the run at once):
#                                       `METHODS=metakgrag,kg-ppr JUDGE=apart
#                                       scripts/dev300.sh medquad` answers two rows
#                                       beside a lane answering the other four.
#                                       To stop both lanes at any time: kill them, then
#                                       `kgrag score RUN --bertscore --geval-stored
#                                       --same K` scores G-Eval from the judged records
#                                       alone (questions judged in part wait)
#   scripts/dev300.sh prepare           On a fresh machine (nothing in ~/.cache/kgrag), what
#                                       the committed runs read: every domain's committed
#                                       export imported, the fast build of the sources the
#                                       exports lack (commonsense's CommonsenseQA part,
#                                       medical, wikipedia) with vectors and entity
#                                       resolution, and the Wikipedia and MedQuAD passage
#                                       corpora. A domain with a frozen full export
#                                       (data/graphs/full/<domain>.jsonl.gz: medical) is
#                                       imported from it instead of built. DOMAINS
#                                       narrows it (e.g. DOMAINS=wikipedia).
#                                       Resumable and idempotent: entities are resolved
#                                       once per graph state (a marker file keeps the
#                                       fingerprint resolution left; a second pass over a
#                                       resolved graph can merge a few more and would
#                                       change its fingerprint). Wikipedia took 16 min on an
#                                       idle fresh machine, its corpus ~7 min.
#
# N defaults to 300 (the whole dev300 files), STEP to 4. Each step answers STEP more
# questions with every method of every dataset before the next, so wherever the script
# stops all methods have answered the same questions; runs resume by question id, so
# running it again continues. Set DATASETS (e.g. DATASETS=csqa) or METHODS to narrow it,
# RUNS for the output root (default runs/dev300). Scores and a report follow each step.
#
# Cost on 2 idle cores with the default 1.5B model, all rows of one question (sum of the
# median s/q per row over the committed runs' latest questions, `python research/seconds.py
# docs/results/<run> FROM TO`, answer-first replies stopped at their option): CommonsenseQA
# ~80 s, MedQA ~160 s, HotpotQA ~220 s (with llm and rag-gold), 2Wiki ~180 s. The sum
# overstates KG runs, whose rows replay a shared call at its recorded seconds: MMLU law
# with ToG sums to ~148 s but took ~95 s of wall clock per question. Per row: llm 1-5,
# kg-no-evidence 2-6, kg-vanilla and metakgrag 6-14, cot 10-31, tog 23-39, rag 18-23,
# ircot and flare ~20, metarag 27-32, seakr 85-92. A side of
# 300 questions is about one to two days of compute on such a machine.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${KGRAG:-.venv/bin/kgrag}
SIDE=${1:?usage: scripts/dev300.sh kg|text|reader|compare|medquad|medquad-judge|prepare [N] [STEP]}
N=${2:-300}
STEP=${3:-4}
RUNS=${RUNS:-runs/dev300}
BIAS=${BIAS:-prompt-prior}  # reader side: the letter reader's position-bias correction

if [ "$SIDE" = prepare ]; then
  $K neo4j status >/dev/null 2>&1 || $K neo4j start
  IFS=, read -r -a domains <<< "${DOMAINS:-legal,commonsense,medical,wikipedia}"
  for d in "${domains[@]}"; do
    echo "== $(date +%T) $d"
    # a frozen full graph (the one a long run reads, with its vectors): imported as it is,
    # so every machine reads the same graph (a fresh build can differ: data/graphs/README.md)
    if [ -f "data/graphs/full/$d.jsonl.gz" ]; then
      $K graph import "data/graphs/full/$d.jsonl.gz" --domain "$d"
    else
      $K graph import "data/graphs/$d.jsonl.gz" --domain "$d"
    fi
    # legal's export is the whole fast build, and a frozen export the whole graph
    if [ "$d" != legal ] && [ ! -f "data/graphs/full/$d.jsonl.gz" ]; then
      $K build --domain "$d" --extractor fast --no-resolve --defer-embeddings
      $K graph embed --domain "$d"
      # once per graph state: a marker keeps the fingerprint resolution left, so a run
      # stopped before resolving resolves next time, and a finished one is not resolved
      # again (a second pass can merge a few more entities and change the fingerprint)
      $K graph resolve --domain "$d" --once
    fi
    case "$d" in
      wikipedia) $K corpus load ;;
      medical) $K corpus load --domain medical ;;
    esac
  done
  # the fingerprints `kgrag eval` compares with a run's recorded `graph` (config.json)
  "$(dirname "$K")/python" - "${domains[@]}" <<'PY'
import sys
from kg_builder.fingerprint import graph_fingerprint
from kgrag.platform import Platform
store = Platform().store
for domain in sys.argv[1:]:
    print(f"{domain}: {graph_fingerprint(store, domain)}")
PY
  exit 0
fi

if [ "$SIDE" = medquad-judge ]; then
  RUN=docs/results/medquad-dev300
  if [ ! -f "$RUN/config.json" ]; then
    echo "no run in $RUN: start \`JUDGE=apart scripts/dev300.sh medquad\` first" >&2
    exit 2
  fi
  $K neo4j status >/dev/null 2>&1 || $K neo4j start
  while :; do
    # the fewest answers of a row, the answers not judged yet, and those of them the judge
    # may read now (their question answered by every row)
    read -r least left ready < <($K progress "$RUN" --brief || echo "0 1 1")
    echo "== $(date +%T) every row has ${least:-0}+ answers; ${left:-1} not judged yet," \
      "${ready:-1} of them answered by every row"
    # scoring reloads BERTScore and ROUGE-L over the whole run: only when the judge has work,
    # or once more at the end
    if ((${ready:-1} > 0 || (${least:-0} >= N && ${left:-1} == 0))) || [ -z "${scored:-}" ]; then
      $K score "$RUN" --bertscore --geval --geval-complete >/dev/null || echo "scoring failed; retrying"
      scored=1
    fi
    ((${least:-0} >= N && ${left:-1} == 0)) && break
    sleep 60
  done
  exit 0
fi

case "$SIDE" in
  kg)
    DATASETS=${DATASETS:-csqa,medqa,mmlu-law}
    METHODS=${METHODS:-llm,cot,kg-vanilla,metakgrag,metakgrag-no-cycle,metakgrag-no-completeness,metakgrag-no-relevance,metakgrag-no-restart,tog}
    ;;
  text)
    DATASETS=${DATASETS:-hotpotqa,2wiki}
    METHODS=${METHODS:-cot,rag,ircot,flare,metarag,seakr}
    ;;
  reader)
    DATASETS=${DATASETS:-csqa,medqa,mmlu-law}
    METHODS=${METHODS:-llm,kg-no-evidence,kg-vanilla,metakgrag-oa,metakgrag,metakgrag-no-cycle,metakgrag-no-completeness,metakgrag-no-relevance,metakgrag-no-restart,tog}
    ;;
  compare)
    DATASETS=${DATASETS:-hotpotqa,2wiki}
    METHODS=${METHODS:-kg-vanilla,metakgrag,tog,kg-ppr}
    ;;
  medquad)
    DATASETS=medquad
    METHODS=${METHODS:-llm,cot,rag,kg-vanilla,metakgrag,kg-ppr}
    ;;
  *) echo "unknown side '$SIDE': kg, text, reader, compare, medquad or prepare" >&2; exit 2 ;;
esac

domain_of() {  # the graph a KG dataset's questions are answered over
  case "$1" in
    csqa) echo commonsense ;;
    medqa) echo medical ;;
    mmlu-law) echo legal ;;
    medquad) echo medical ;;
    hotpotqa | 2wiki) echo wikipedia ;;
    *) echo "no domain graph for dataset '$1'" >&2; exit 2 ;;
  esac
}

run_of() {  # the run directory of a dataset's side
  if [ "$SIDE" = compare ]; then echo "docs/results/$1-dev"
  elif [ "$SIDE" = medquad ]; then echo docs/results/medquad-dev300
  elif [ "$SIDE" != reader ]; then echo "$RUNS/$1"
  elif [ "$BIAS" = prompt-prior ]; then echo "docs/results/reader-$1-pp"
  elif [ "$1" = csqa ]; then echo docs/results/reader-csqa-kgfull
  else echo "docs/results/reader-$1-dev300"; fi
}

$K neo4j status >/dev/null 2>&1 || $K neo4j start
IFS=, read -r -a datasets <<< "$DATASETS"
# Resume at the last step every run has finished for these methods, instead of walking
# through the finished steps again (each reloads the model: ~25 s a step)
start=$N
for d in "${datasets[@]}"; do
  least=$($K progress "$(run_of "$d")" --methods "$METHODS" --brief 2>/dev/null) || least=0
  least=${least%% *}
  ((${least:-0} < start)) && start=${least:-0}
done
start=$((start / STEP * STEP))
((start < STEP)) && start=$STEP
for ((n = start; n < N + STEP; n += STEP)); do
  ((n > N)) && n=$N
  for d in "${datasets[@]}"; do
    args=(--dataset "$d" --methods "$METHODS" --n "$n" --out "$(run_of "$d")")
    [ "$SIDE" != text ] && args+=(--domain "$(domain_of "$d")")
    [ "$SIDE" = reader ] && args+=(--bias "$BIAS")
    echo "== $(date +%T) $d: first $n questions"
    $K eval "${args[@]}"
    if [ "$SIDE" = medquad ]; then  # open-ended rows: no paired right/wrong table to share
      [ "${JUDGE:-}" = apart ] || $K score "$(run_of "$d")" --bertscore --geval --geval-complete >/dev/null
    else
      $K score "$(run_of "$d")" --same "$n" >/dev/null
    fi
  done
  ((n == N)) && break
done
runs=()
for d in "${datasets[@]}"; do runs+=("$(run_of "$d")"); done
$K report "${runs[@]}" --out "$RUNS/report-$SIDE"
echo "tables: $RUNS/report-$SIDE/report.md; per run: python scripts/results_tables.py ${runs[*]}"
