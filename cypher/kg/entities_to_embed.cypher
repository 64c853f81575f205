// Up to $limit entities of $domain whose vector was not made by $model (kgrag graph embed
// --model: resumable re-embedding in place); the name is what is embedded.
MATCH (e:Entity {domain: $domain})
WHERE e.embedding_model IS NULL OR e.embedding_model <> $model
RETURN e.key AS id, e.name AS text
LIMIT $limit
