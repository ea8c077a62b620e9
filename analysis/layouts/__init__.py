"""Study 07: the attention layouts of real models (notebook 07_layouts.ipynb, results in results/)."""
