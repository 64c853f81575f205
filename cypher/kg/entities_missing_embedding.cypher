MATCH (e:Entity {domain: $domain})
WHERE e.embedding IS NULL
RETURN e.key AS key, e.name AS name
