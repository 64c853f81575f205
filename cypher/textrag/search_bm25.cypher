// Open-domain sparse retrieval: Lucene BM25 over Passage title and text.
// $query is a Lucene query string already escaped by textrag.retrievers.lucene_query.
CALL db.index.fulltext.queryNodes('passage_text', $query, {limit: $k})
YIELD node, score
RETURN node.id AS id, node.title AS title, node.text AS text, score
