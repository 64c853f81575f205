MATCH (e:Entity {domain: $domain})
RETURN e.key AS key, e.name AS name, e.aliases AS aliases, e.embedding AS embedding
ORDER BY key
