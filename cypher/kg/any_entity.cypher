// Whether the database holds any entity of any domain (a fresh database holds none).
RETURN EXISTS { MATCH (:Entity) } AS any
