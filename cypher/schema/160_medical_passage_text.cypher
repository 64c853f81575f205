// Lucene BM25 over the medical corpus's title (the MedQuAD question) and text (its answer).
CREATE FULLTEXT INDEX medical_passage_text IF NOT EXISTS FOR (p:MedicalPassage) ON EACH [p.title, p.text]
