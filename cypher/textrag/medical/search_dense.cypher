// Dense retrieval over the medical corpus only: cosine similarity of MiniLM vectors.
CALL db.index.vector.queryNodes('medical_passage_embedding', $k, $embedding)
YIELD node, score
RETURN node.id AS id, node.title AS title, node.text AS text, score
