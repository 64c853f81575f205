// Wikipedia (and user) passages for the text-based methods.
CREATE CONSTRAINT passage_id IF NOT EXISTS FOR (p:Passage) REQUIRE p.id IS UNIQUE
