// Build-job records (kgrag build): counts, failures, model, prompt hash, timings.
CREATE CONSTRAINT job_id IF NOT EXISTS FOR (j:BuildJob) REQUIRE j.id IS UNIQUE
