"""Adapters to other evaluation harnesses (optional extras; each module imports its harness)."""
