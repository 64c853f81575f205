// Remove a domain's chunk passages whose id starts with $prefix (tests, re-indexing).
MATCH (p:ChunkPassage {domain: $domain})
WHERE p.id STARTS WITH $prefix
DETACH DELETE p
RETURN count(*) AS deleted
