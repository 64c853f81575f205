// Remove one domain's graph (entities, facts, chunks, documents, jobs) in batches.
// Runs in an auto-commit transaction (GraphStore.run_autocommit).
MATCH (n) WHERE n.domain = $domain OR (n:Domain AND n.name = $domain)
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS
