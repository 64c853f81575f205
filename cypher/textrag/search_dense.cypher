// Open-domain dense retrieval: cosine similarity of MiniLM vectors (passage_embedding).
CALL db.index.vector.queryNodes('passage_embedding', $k, $embedding)
YIELD node, score
RETURN node.id AS id, node.title AS title, node.text AS text, score
