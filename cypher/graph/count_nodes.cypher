MATCH (n) RETURN count(n) AS n
