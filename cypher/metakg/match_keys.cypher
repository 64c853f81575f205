// Which candidate keys $keys (question n-grams, option texts, titles) are entities of
// $domain: the exact-key lookup of metakg.seeds (one round trip per text batch).
UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
RETURN e.key AS key
