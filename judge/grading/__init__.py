"""Grading: the grader (evidence, checks, judge, gates), the service that stores grades, and scoring."""
