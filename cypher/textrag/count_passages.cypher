MATCH (p:Passage)
RETURN count(p) AS passages, count(p.embedding) AS embedded
