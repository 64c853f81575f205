// The $k scratch nodes the index nominates for $vector, best first.
CALL db.index.vector.queryNodes('vector_cost_scratch', $k, $vector)
YIELD node
RETURN node.k AS k
