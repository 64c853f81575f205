// One node per domain graph (commonsense, medical, legal, wikipedia, user domains).
CREATE CONSTRAINT domain_name IF NOT EXISTS FOR (d:Domain) REQUIRE d.name IS UNIQUE
