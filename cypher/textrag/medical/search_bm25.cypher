// Sparse retrieval over the medical corpus only: Lucene BM25 over MedicalPassage title
// and text. $query is escaped by textrag.retrievers.lucene_query.
CALL db.index.fulltext.queryNodes('medical_passage_text', $query, {limit: $k})
YIELD node, score
RETURN node.id AS id, node.title AS title, node.text AS text, score
