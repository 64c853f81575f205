// Entities are unique per (domain, normalised key): the same name in two domains is two nodes.
CREATE CONSTRAINT entity_domain_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.domain, e.key) IS UNIQUE
