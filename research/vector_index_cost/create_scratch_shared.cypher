// The same vectors as :Entity nodes of a scratch domain: inserted into the shared
// entity_embedding index at commit, as a new domain's import does.
UNWIND $rows AS row
CREATE (n:VectorCostScratch:Entity {k: row.k, domain: $domain, key: 'scratch ' + toString(row.k)})
WITH n, row
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
