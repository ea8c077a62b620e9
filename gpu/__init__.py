"""Attention backend (torch / Triton) for SWA, SA and gated SA+SWA.

Not implemented yet: the backend issue fills this package. It is installed now so that the distribution's
layout is fixed; importing it does not need torch.
"""
