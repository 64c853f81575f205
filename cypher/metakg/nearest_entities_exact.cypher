// nearest_entities by an exact scan of the domain (through the entity_domain index), for
// small domains, where it is cheaper than over-fetching from the shared vector index.
// Each embedding is read once and compared with every vector of $vectors.
MATCH (e:Entity {domain: $domain})
WHERE e.embedding IS NOT NULL
WITH e, e.embedding AS embedding
UNWIND range(0, size($vectors) - 1) AS i
WITH i, e, vector.similarity.cosine(embedding, $vectors[i]) AS s
ORDER BY i, s DESC, e.key
WITH i, collect({node: e, score: s})[..$k] AS hits
RETURN i,
       [j IN range(0, size(hits) - 1) | {
          key: hits[j].node.key, name: hits[j].node.name, score: 2 * hits[j].score - 1,
          embedding: CASE WHEN j < $embed THEN hits[j].node.embedding END}] AS hits
ORDER BY i
