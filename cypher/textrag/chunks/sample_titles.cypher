// A domain's passage titles in id order.
MATCH (p:ChunkPassage {domain: $domain})
RETURN p.title AS title
ORDER BY p.id
LIMIT $n
