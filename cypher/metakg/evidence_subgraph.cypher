// The evidence subgraph of one answer, for Neo4j Browser ("Open in Neo4j Browser"):
// $triples is a list of [head key, predicate, tail key] in stored orientation.
UNWIND $triples AS t
MATCH (h:Entity {domain: $domain, key: t[0]})
USING INDEX h:Entity(domain, key)
MATCH (x:Entity {domain: $domain, key: t[2]})
USING INDEX x:Entity(domain, key)
MATCH p = (h)-[:REL {predicate: t[1]}]->(x)
RETURN p
