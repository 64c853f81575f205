// Remove the medical passages whose id starts with $prefix (test clean-up).
MATCH (p:MedicalPassage)
WHERE p.id STARTS WITH $prefix
DETACH DELETE p
RETURN count(*) AS deleted
