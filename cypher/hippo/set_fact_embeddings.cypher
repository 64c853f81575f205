// Store fact vectors ($rows of {id, embedding}: element ids from facts_to_embed) and mark
// the model that made them.
UNWIND $rows AS row
MATCH ()-[r:REL]->() WHERE elementId(r) = row.id
CALL db.create.setRelationshipVectorProperty(r, 'embedding', row.embedding)
SET r.embedding_model = $model
