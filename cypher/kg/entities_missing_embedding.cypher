MATCH (e:Unembedded)
WHERE e.domain = $domain
RETURN e.key AS key, e.name AS name
