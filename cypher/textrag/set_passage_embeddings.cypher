// Replace the vectors of existing passages and mark the model that made them.
UNWIND $rows AS row
MATCH (p:Passage {id: row.id})
CALL db.create.setNodeVectorProperty(p, 'embedding', row.embedding)
SET p.embedding_model = $model
