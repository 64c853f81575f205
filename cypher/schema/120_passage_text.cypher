// Lucene BM25 over title and text: the open-domain sparse retriever.
CREATE FULLTEXT INDEX passage_text IF NOT EXISTS FOR (p:Passage) ON EACH [p.title, p.text]
