"""Study 08: causal coverage, the causal SA+SWA models against every committed seed, and the causal variants
(notebook 08_causal.ipynb, scripts run as ``python -m analysis.causal.<script>``, results in results/)."""
