"""The numerical-methods study: the approximation lab on real attention (MiniLM), a causal decoder, cost refreshes."""
