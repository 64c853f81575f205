// Every entity key of $domain that has a vector (kgrag graph hippo: synonym edges).
MATCH (e:Entity {domain: $domain})
WHERE e.embedding IS NOT NULL
RETURN e.key AS key
