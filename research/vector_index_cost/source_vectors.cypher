// Up to $n stored entity vectors of one domain, read only (real vectors for the recall test).
MATCH (e:Entity {domain: $domain})
WHERE e.embedding IS NOT NULL
RETURN e.embedding AS embedding
LIMIT $n
