"""Convergence checks of a fit: R-hat, ESS, divergences, E-BFMI, rank uniformity, and the advice when one fails."""
