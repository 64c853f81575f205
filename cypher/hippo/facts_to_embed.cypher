// Up to $limit facts of $domain whose vector was not made by $model (kgrag graph hippo:
// resumable). The text embedded is "subject relation object" (HippoRAG 2, sec. 3.2).
MATCH (h:Entity {domain: $domain})-[r:REL]->(t:Entity)
WHERE r.embedding_model IS NULL OR r.embedding_model <> $model
RETURN elementId(r) AS id, h.name + ' ' + r.predicate + ' ' + t.name AS text
LIMIT $limit
