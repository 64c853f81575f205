// Passage titles in id order: the benchmark's queries.
MATCH (p:Passage)
RETURN p.title AS title
ORDER BY p.id
LIMIT $n
