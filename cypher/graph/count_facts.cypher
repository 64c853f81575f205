// How many facts (:REL) $domain has.
MATCH (:Entity {domain: $domain})-[r:REL]->(:Entity)
RETURN count(r) AS facts
