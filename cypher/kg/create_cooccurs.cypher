// Fast path of import_cooccurs (a new domain, see domain_is_new): rows are unique by
// (h, t); h and t are element ids returned by create_entities in the same import.
UNWIND $rows AS row
MATCH (h:Entity) WHERE elementId(h) = row.h
MATCH (t:Entity) WHERE elementId(t) = row.t
CREATE (h)-[:CO_OCCURS {domain: $domain, weight: row.w, chunk_ids: row.chunks,
                        extractor: 'spacy'}]->(t)
