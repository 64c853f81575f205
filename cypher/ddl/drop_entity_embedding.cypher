// Before a bulk load into a database without entities (`kgrag demo` on a fresh machine):
// populating the vector index once after the load is faster than inserting into it per
// transaction (docs/benchmarks.md, "make demo"); apply_schema creates it again.
DROP INDEX entity_embedding IF EXISTS
