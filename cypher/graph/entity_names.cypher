// Every entity of $domain with its display name (ConceptNet and HPO imports resolve their
// concepts against them).
MATCH (e:Entity {domain: $domain})
RETURN e.key AS key, e.name AS name
