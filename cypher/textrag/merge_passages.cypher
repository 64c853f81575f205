// Upsert passages with their vectors (float32 vector property, like entity embeddings).
UNWIND $rows AS row
MERGE (p:Passage {id: row.id})
SET p.title = row.title, p.text = row.text
WITH p, row
CALL db.create.setNodeVectorProperty(p, 'embedding', row.embedding)
