"""Study 02: is full coverage O(log_w n)? The bound checked against the engine (notebook 02_bound.ipynb, results in
results/)."""
