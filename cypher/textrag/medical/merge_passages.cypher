// Upsert medical passages (a MedQuAD question as title, its answer as text) with their
// vectors (float32 vector property, like Wikipedia's).
UNWIND $rows AS row
MERGE (p:MedicalPassage {id: row.id})
SET p.title = row.title, p.text = row.text
WITH p, row
CALL db.create.setNodeVectorProperty(p, 'embedding', row.embedding)
