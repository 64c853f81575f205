// How many entities a domain has (an export's count, before it pages through them).
MATCH (e:Entity {domain: $domain})
RETURN count(e) AS entities
