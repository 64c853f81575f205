MERGE (d:Domain {name: $domain})
ON CREATE SET d.created = datetime()
