"""Studies of the receptive toolkit: one package per study (scripts, committed results, notebook, README), and the
figures of the committed results (:mod:`analysis.figures`)."""
