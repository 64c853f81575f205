// The medical corpus (MedQuAD answers, `textrag.corpora.MEDICAL`): passages and vectors.
MATCH (p:MedicalPassage)
RETURN count(p) AS passages, count(p.embedding) AS embedded
