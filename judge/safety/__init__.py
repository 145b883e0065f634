"""Untrusted input and integrity: prompt injection, ground-truth leaks, forbidden agent-log actions, verbatim quotes."""
