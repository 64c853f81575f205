// Which of $rows are stored in the medical corpus already, unchanged and embedded: the
// loader skips those, so reloading writes nothing.
UNWIND $rows AS row
MATCH (p:MedicalPassage {id: row.id})
WHERE p.embedding IS NOT NULL AND p.title = row.title AND p.text = row.text
RETURN p.id AS id
