"""Checks: one folder per check a rubric leaf can name (its evidence, features and decision), and the registry."""
