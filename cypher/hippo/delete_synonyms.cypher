// Remove $domain's synonym edges (kgrag graph hippo rebuilds them).
MATCH (:Entity {domain: $domain})-[s:SYNONYM]->(:Entity)
CALL (s) { DELETE s } IN TRANSACTIONS OF 10000 ROWS
