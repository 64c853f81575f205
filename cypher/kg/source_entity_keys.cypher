// Keys of the entities that chunks of one source mention (WordNet's lemmas: entity
// resolution never merges two of them, kg_builder.resolve rule 5).
MATCH (c:Chunk {domain: $domain})
WHERE c.source = $source
MATCH (c)-[:MENTIONS]->(e:Entity)
RETURN DISTINCT e.key AS key
