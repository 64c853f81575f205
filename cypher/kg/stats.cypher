// The graph-quality report of one domain (kgrag graph stats).
CALL () { MATCH (e:Entity {domain: $domain}) RETURN count(e) AS entities }
CALL () { MATCH ()-[r:REL {domain: $domain}]->() RETURN count(r) AS relations,
          sum(CASE WHEN size(r.chunk_ids) > 0 THEN 1 ELSE 0 END) AS with_provenance }
CALL () { MATCH (e:Entity {domain: $domain}) WHERE NOT (e)-[:REL]-()
          RETURN count(e) AS orphans }
CALL () { MATCH ()-[r:CO_OCCURS {domain: $domain}]->() RETURN count(r) AS co_occurrences }
CALL () { MATCH (c:Chunk {domain: $domain}) RETURN count(c) AS chunks }
CALL () { MATCH (e:Entity {domain: $domain}) WHERE e.embedding IS NULL
          RETURN count(e) AS without_embedding }
RETURN entities, relations, with_provenance, orphans, co_occurrences, chunks,
       without_embedding
