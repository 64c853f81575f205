// Mirror of a build job's record (kg_builder/jobs.py) for the app and Neo4j Browser.
MERGE (j:BuildJob {id: $job.id})
SET j += $job
