CREATE INDEX chunk_domain IF NOT EXISTS FOR (c:Chunk) ON (c.domain)
