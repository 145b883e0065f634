"""Development tools: a local OpenAI-compatible stub server and helpers that start real local services."""
