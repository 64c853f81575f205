// Up to $limit passages whose vector was not made by $model (kgrag corpus embed: resumable,
// a stored passage is marked with the model that embedded it).
MATCH (p:MedicalPassage)
WHERE p.embedding_model IS NULL OR p.embedding_model <> $model
RETURN p.id AS id, p.title AS title, p.text AS text
LIMIT $limit
