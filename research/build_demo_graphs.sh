#!/usr/bin/env bash
# Grows the demo graphs with the default local model and exports them to data/graphs/.
# Resumable on any machine: each committed export is imported first, and `kgrag build`
# skips the chunks the graph already holds, so only new records are extracted.
# Usage: research/build_demo_graphs.sh [COMMONSENSE_LIMIT] [MEDICAL_LIMIT] [LEGAL_LIMIT] [WIKIPEDIA_LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
K=.venv/bin/kgrag
$K neo4j status >/dev/null || $K neo4j start
grow() {  # domain limit [build options...]
  local domain=$1 limit=$2; shift 2
  if [ -f "data/graphs/$domain.jsonl.gz" ]; then $K graph import "data/graphs/$domain.jsonl.gz"; fi
  $K build --domain "$domain" --limit "$limit" "$@"
  $K graph export --domain "$domain"
}
grow commonsense "${1:-600}"
grow medical "${2:-300}" --only medmcqa
grow legal "${3:-200}"
grow wikipedia "${4:-120}"  # the first 12 HotpotQA dev questions' context paragraphs
$K build --status --domain all
