// Record the embedder of one scope's vectors (kgrag.vectors); `complete` false while a
// re-embedding runs, so an interrupted one is seen and resumed.
MERGE (v:VectorModel {scope: $scope})
SET v.model = $model, v.complete = $complete, v.previous = $previous, v.updated = datetime()
