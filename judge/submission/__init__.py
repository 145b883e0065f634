"""The submission parsed once: its diff, code units, notebooks, execution records and text, as one view."""
