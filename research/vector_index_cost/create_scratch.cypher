// Scratch nodes outside every index of the project (no :Entity label).
UNWIND $rows AS row
CREATE (n:VectorCostScratch {k: row.k})
WITH n, row
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
