"""design_variable: does the design spec name each experiment variable with its values."""
