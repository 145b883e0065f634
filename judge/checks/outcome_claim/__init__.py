"""outcome_claim: are the conclusion's outcome claims grounded in the run's numbers (readings, grounding, decision)."""
