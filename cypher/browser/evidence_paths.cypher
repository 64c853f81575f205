// A question's evidence as paths: one MetaKGRAG path, a refined path, or the integrated
// evidence of an answer. $triples holds [head key, predicate, tail key] lists in stored
// orientation (as the app and the methods' traces give them).
// Browser: `:params {domain: "commonsense", triples: [["milk", "stored in", "refrigerator"]]}`
WITH $domain AS domain, $triples AS triples
UNWIND triples AS t
MATCH (h:Entity {domain: domain, key: t[0]})
USING INDEX h:Entity(domain, key)
MATCH (x:Entity {domain: domain, key: t[2]})
USING INDEX x:Entity(domain, key)
MATCH p = (h)-[r:REL {predicate: t[1]}]->(x)
RETURN p, h.key AS head, r.predicate AS predicate, x.key AS tail
