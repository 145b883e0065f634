"""The sentence-embedding model, its content-keyed vector cache, and shortlists ranked by it."""
