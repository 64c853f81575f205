// Every fact of a domain as (head key, tail key, kind): connected components and the
// relation-kind mix of the quality report (kgrag graph stats).
MATCH (h:Entity {domain: $domain})-[r:REL]->(t:Entity)
RETURN h.key AS h, t.key AS t, r.kind AS k
