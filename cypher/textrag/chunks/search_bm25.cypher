// Sparse retrieval over one domain's chunk passages: Lucene BM25 over title and text.
// $query is built by textrag.retrievers.domain_query: `+corpus:<token> +(title:(…) text:(…))`,
// so the domain filter is part of the Lucene query (applied before ranking, not after).
CALL db.index.fulltext.queryNodes('chunk_passage_text', $query, {limit: $k})
YIELD node, score
WHERE node.domain = $domain
RETURN node.id AS id, node.title AS title, node.text AS text, score
