// kg-ppr (HippoRAG 2 recognition): fact vectors, the text "subject relation object" of
// each :REL, embedded by `kgrag graph hippo` (384 = the registered small encoders).
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR ()-[r:REL]-() ON (r.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}
