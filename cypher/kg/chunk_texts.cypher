// The stored text of a domain's source chunks among $ids: `kgrag build` skips the chunks
// already in the graph, and extracts again those whose source text has changed since.
MATCH (c:Chunk {domain: $domain})
WHERE c.id IN $ids
RETURN c.id AS id, c.text AS text
