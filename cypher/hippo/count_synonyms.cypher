// How many synonym edges $domain has (counted apart from its facts).
MATCH (:Entity {domain: $domain})-[s:SYNONYM]->(:Entity)
RETURN count(s) AS synonyms
