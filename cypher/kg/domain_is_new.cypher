// GraphWriter's fast path (CREATE instead of MERGE) is safe only for a domain with no
// entity and no chunk yet, whose incoming chunk and document ids no node holds (chunk and
// document ids are unique across domains). Any other case takes the MERGE statements.
RETURN NOT EXISTS { MATCH (:Entity {domain: $domain}) }
   AND NOT EXISTS { MATCH (:Chunk {domain: $domain}) }
   AND NOT EXISTS { MATCH (c:Chunk) WHERE c.id IN $chunk_ids }
   AND NOT EXISTS { MATCH (d:Document) WHERE d.id IN $doc_ids } AS new
