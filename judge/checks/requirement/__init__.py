"""requirement_in_diff: does the diff implement each requirement (evidence, behaviour, the acts rule, decision)."""
