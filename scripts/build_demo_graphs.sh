#!/usr/bin/env bash
# Builds the demo graphs with the default local model and exports them to data/graphs/.
# Resumable: re-run the script after an interruption; finished records are not redone.
# Usage: scripts/build_demo_graphs.sh [COMMONSENSE_LIMIT] [MEDICAL_LIMIT] [LEGAL_LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
K=.venv/bin/kgrag
$K neo4j status >/dev/null || $K neo4j start
$K build --domain commonsense --limit "${1:-600}"
$K graph export --domain commonsense
$K build --domain medical --only medmcqa --limit "${2:-300}"
$K graph export --domain medical
$K build --domain legal --limit "${3:-200}"
$K graph export --domain legal
$K build --status --domain all
