// All entity-entity facts share one relationship type; the predicate text is a property.
CREATE INDEX rel_predicate IF NOT EXISTS FOR ()-[r:REL]-() ON (r.predicate)
