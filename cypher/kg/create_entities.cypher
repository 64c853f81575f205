// Fast path of merge_entities (a new domain, see domain_is_new): rows are unique by key.
// The element ids let create_facts and create_mentions skip the (domain, key) index.
UNWIND $rows AS row
CREATE (e:Entity:Unembedded {domain: $domain, key: row.key, name: row.name,
                             aliases: row.aliases})
RETURN row.key AS key, elementId(e) AS id
