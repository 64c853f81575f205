// How many passages a domain's chunk corpus holds, and how many have their vector.
MATCH (p:ChunkPassage {domain: $domain})
RETURN count(p) AS passages, count(p.embedding) AS embedded
