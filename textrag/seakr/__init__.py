"""SeaKR (Yao et al., ACL 2025): self-aware retrieval, re-ranking and reasoning from the
model's hidden-state uncertainty. `method` (the loop and its factories), `uncertainty`
(the estimator), `text` (queries from sure words), `calibrate` (δ per model), `bench`."""
