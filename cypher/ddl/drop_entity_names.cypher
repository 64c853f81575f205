// Before a bulk load into a database without entities, like drop_entity_embedding: the
// full-text index of entity names is populated once afterwards by apply_schema.
DROP INDEX entity_names IF EXISTS
