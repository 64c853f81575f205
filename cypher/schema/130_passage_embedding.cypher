CREATE VECTOR INDEX passage_embedding IF NOT EXISTS FOR (p:Passage) ON (p.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}
