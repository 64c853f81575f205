// Which of $rows are stored already, unchanged and embedded: the loader skips those,
// so reloading a corpus writes nothing.
UNWIND $rows AS row
MATCH (p:Passage {id: row.id})
WHERE p.embedding IS NOT NULL AND p.title = row.title AND p.text = row.text
RETURN p.id AS id
