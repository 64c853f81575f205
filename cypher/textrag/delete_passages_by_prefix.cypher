// Remove the passages whose id starts with $prefix (test and benchmark clean-up).
MATCH (p:Passage)
WHERE p.id STARTS WITH $prefix
DETACH DELETE p
RETURN count(*) AS deleted
