// Test fixture statement: the labels of the passages with these ids, in either corpus
// (Wikipedia `Passage`, medical `MedicalPassage`), each looked up through its id index.
UNWIND $ids AS id
OPTIONAL MATCH (w:Passage {id: id})
OPTIONAL MATCH (m:MedicalPassage {id: id})
RETURN id,
       CASE WHEN w IS NULL THEN [] ELSE labels(w) END +
       CASE WHEN m IS NULL THEN [] ELSE labels(m) END AS labels
