// The passages of the medical corpus with the ids $ids (kg-ppr: graph-ranked passages).
UNWIND $ids AS id
MATCH (p:MedicalPassage {id: id})
RETURN p.id AS id, p.title AS title, p.text AS text
