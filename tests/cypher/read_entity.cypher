MATCH (e:Entity {domain: $domain, key: $key})
RETURN e.name AS name
