// Entity resolution: merge each cluster's other nodes into the kept one (APOC), keep the
// canonical name, all aliases, and the merged keys (so later builds map them here).
UNWIND $rows AS row
MATCH (keep:Entity {domain: $domain, key: row.keep})
USING INDEX keep:Entity(domain, key)
CALL (row) {
  UNWIND row.merge AS k
  MATCH (o:Entity {domain: $domain, key: k})
  USING INDEX o:Entity(domain, key)
  RETURN collect(o) AS others
}
WITH keep, row, others
WHERE size(others) > 0
CALL apoc.refactor.mergeNodes([keep] + others,
  {properties: 'discard', mergeRels: false, produceSelfRel: false}) YIELD node
SET node.name = row.name, node.aliases = row.aliases,
    node.merged_keys = coalesce(node.merged_keys, []) + row.merge
RETURN count(node) AS merged
