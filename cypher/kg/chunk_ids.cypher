// The ids of a domain's source chunks already in the graph (extracted by an earlier job
// or imported from an export); `kgrag build` does not extract them again.
MATCH (c:Chunk {domain: $domain})
WHERE c.id IN $ids
RETURN c.id AS id
