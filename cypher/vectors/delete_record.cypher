// Forget the embedder record of one scope (its vectors are gone, e.g. a dropped domain).
MATCH (v:VectorModel {scope: $scope})
DELETE v
