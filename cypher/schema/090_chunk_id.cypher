// Chunks are the provenance of triples: (:Chunk)-[:MENTIONS]->(:Entity), REL.chunk_ids.
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE
