// Every fact of a domain as (head key, predicate, tail key, kind): connected components
// and the relation-kind mix of the quality report (kgrag graph stats); entity resolution
// keeps names a fact relates apart.
MATCH (h:Entity {domain: $domain})-[r:REL]->(t:Entity)
RETURN h.key AS h, r.predicate AS r, t.key AS t, r.kind AS k,
       coalesce(r.extractor, 'llm') AS x
