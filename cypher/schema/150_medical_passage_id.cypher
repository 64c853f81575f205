// MedQuAD answers as passages: the medical domain's corpus (`textrag.corpora`), under a
// label of its own so Wikipedia's indexes never return them and theirs never return
// Wikipedia paragraphs.
CREATE CONSTRAINT medical_passage_id IF NOT EXISTS FOR (p:MedicalPassage) REQUIRE p.id IS UNIQUE
