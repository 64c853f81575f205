// Which embedder made the vectors of one scope (`corpus:<name>` or `graph:<domain>`), and
// whether a re-embedding to `model` finished (kgrag.vectors).
MATCH (v:VectorModel {scope: $scope})
RETURN v.model AS model, v.complete AS complete, v.previous AS previous
