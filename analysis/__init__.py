"""Studies of the receptive toolkit: one package per study (scripts, committed results, notebook, README)."""
