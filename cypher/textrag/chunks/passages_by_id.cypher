// The passages of a domain's chunk corpus with the ids $ids (kg-ppr: graph-ranked passages).
UNWIND $ids AS id
MATCH (p:ChunkPassage {id: id})
WHERE p.domain = $domain
RETURN p.id AS id, p.title AS title, p.text AS text
