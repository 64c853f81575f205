// One page of a domain's entities for an export, in key order after $after (keyset
// paging over the (domain, key) index): an export holds one page of vectors at a time.
MATCH (e:Entity {domain: $domain})
USING INDEX e:Entity(domain, key)
WHERE e.key > $after
RETURN e.key AS key, e.name AS name, e.aliases AS aliases, e.embedding AS embedding
ORDER BY e.key
LIMIT $limit
