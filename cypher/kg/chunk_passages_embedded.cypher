// Which of $rows are stored already in $domain, unchanged and embedded: indexing skips them.
UNWIND $rows AS row
MATCH (p:ChunkPassage {id: row.id})
WHERE p.domain = $domain AND p.embedding IS NOT NULL AND p.title = row.title
  AND p.text = row.text
RETURN p.id AS id
