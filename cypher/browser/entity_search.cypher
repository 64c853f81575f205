// Entities of a domain whose name or an alias contains $text (case-insensitive): the exact
// name first, then names that start with it, then the most connected; at most $limit.
// Browser: `:params {domain: "commonsense", text: "milk", limit: 20}`
WITH $domain AS domain, $text AS text, $limit AS lim
WITH domain, toLower(trim(text)) AS needle, lim
MATCH (e:Entity {domain: domain})
WHERE toLower(e.name) CONTAINS needle
   OR any(a IN coalesce(e.aliases, []) WHERE toLower(a) CONTAINS needle)
WITH e, lim, COUNT { (e)-[:REL]-() } AS degree,
     CASE WHEN toLower(e.name) = needle THEN 0
          WHEN toLower(e.name) STARTS WITH needle THEN 1 ELSE 2 END AS rank
ORDER BY rank, degree DESC, e.key
WITH collect({node: e, degree: degree}) AS hits, lim
UNWIND hits[..lim] AS hit
RETURN hit.node AS e, hit.node.key AS key, hit.node.name AS name, hit.degree AS degree
