"""expjudge's grading library: models, rubrics, evidence, judges, store, jobs and CLI.

It never imports the web layer (`api/`).
"""

__version__ = "0.3.1"
