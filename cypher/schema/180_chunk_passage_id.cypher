// A domain's chunks as passages (textrag.corpora, kg_builder.passages): one ChunkPassage
// per source chunk, with the chunk's id, so a fact's chunk names its passage.
CREATE CONSTRAINT chunk_passage_id IF NOT EXISTS FOR (p:ChunkPassage) REQUIRE p.id IS UNIQUE
