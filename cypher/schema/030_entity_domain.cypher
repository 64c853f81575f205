CREATE INDEX entity_domain IF NOT EXISTS FOR (e:Entity) ON (e.domain)
