"""integrity: forbidden actions in the agent log, as a gate on the whole grade."""
