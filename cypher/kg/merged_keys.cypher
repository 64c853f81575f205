// Keys that entity resolution merged away → the key they now live under.
MATCH (e:Entity {domain: $domain})
WHERE e.merged_keys IS NOT NULL
UNWIND e.merged_keys AS merged
RETURN merged, e.key AS key
