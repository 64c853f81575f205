CREATE INDEX chunk_passage_domain IF NOT EXISTS FOR (p:ChunkPassage) ON (p.domain)
