"""claim_vs_diff: does the diff support each claim made about it (evidence, features, decision)."""
