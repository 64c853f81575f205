// Replace entity vectors ($rows of {id: key, embedding}) and mark the model that made them.
UNWIND $rows AS row
MATCH (e:Entity {domain: $domain, key: row.id})
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
SET e.embedding_model = $model
