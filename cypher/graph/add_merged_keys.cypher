// Keys under which an entity is also found (imported concepts resolved to it, ontology
// synonyms): appended to its merged keys, which the entity matcher follows
// (kg/merged_keys). Nothing is written when every key is there already.
UNWIND $rows AS row
MATCH (e:Entity {domain: $domain, key: row.key})
USING INDEX e:Entity(domain, key)
WITH e, [k IN row.merged WHERE NOT k IN coalesce(e.merged_keys, [])] AS new
WHERE size(new) > 0
SET e.merged_keys = coalesce(e.merged_keys, []) + new
