"""Fitting: the start at the mode, the compiled nutpie build and its disk cache, drawing to a target ESS, replicates."""
