// A rebuild's clean-up: the passages of $domain from the sources $sources whose ids are
// not among $keep (the chunks the sources now make) go.
MATCH (p:ChunkPassage {domain: $domain})
WHERE p.source IN $sources AND NOT p.id IN $keep
DETACH DELETE p
RETURN count(*) AS deleted
