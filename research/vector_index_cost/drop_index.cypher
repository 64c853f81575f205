DROP INDEX vector_cost_scratch IF EXISTS
