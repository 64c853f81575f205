CREATE VECTOR INDEX medical_passage_embedding IF NOT EXISTS FOR (p:MedicalPassage) ON (p.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}
