"""IM-RAG (Yang et al., SIGIR 2024): a prompted inner monologue. `method` (Questioner,
Answerer, the loop), `refine` (the Refiner), `progress` (the Progress Tracker)."""
