"""Checks: one module per check a rubric leaf can name, and the registry that lists them."""
