// Entity resolution's view of a domain: names and aliases, and whether a vector is stored
// (the vectors themselves are read only for the candidates, kg/entity_embeddings).
MATCH (e:Entity {domain: $domain})
RETURN e.key AS key, e.name AS name, e.aliases AS aliases, e.embedding IS NOT NULL AS embedded
ORDER BY key
