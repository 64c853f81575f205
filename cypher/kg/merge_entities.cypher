// Upsert entities; new aliases are appended, nothing is written when nothing is new.
// New entities carry the :Unembedded label until their vector is stored.
UNWIND $rows AS row
MERGE (e:Entity {domain: $domain, key: row.key})
ON CREATE SET e.name = row.name, e.aliases = row.aliases, e:Unembedded
WITH e, row
WHERE any(a IN row.aliases WHERE NOT a IN e.aliases)
SET e.aliases = e.aliases + [a IN row.aliases WHERE NOT a IN e.aliases]
