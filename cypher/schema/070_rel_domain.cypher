CREATE INDEX rel_domain IF NOT EXISTS FOR ()-[r:REL]-() ON (r.domain)
