// A vector index of the scratch nodes only, with the HNSW settings in $config.
CREATE VECTOR INDEX vector_cost_scratch IF NOT EXISTS
FOR (n:VectorCostScratch) ON (n.embedding)
OPTIONS {indexConfig: $config}
