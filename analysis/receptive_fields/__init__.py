"""Study 01: receptive-field coverage through depth (notebook 01_coverage.ipynb, results in results/)."""
