"""Saving matplotlib figures the way every command of the toolkit does: PNG and PDF side by side."""

from __future__ import annotations

from graphs.cli_common import save_png_pdf

__all__ = ["save_png_pdf"]  # lives in graphs (below receptive), written atomically
