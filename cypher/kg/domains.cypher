MATCH (d:Domain)
RETURN d.name AS name ORDER BY name
