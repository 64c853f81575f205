CALL db.awaitIndex('vector_cost_scratch', $seconds)
