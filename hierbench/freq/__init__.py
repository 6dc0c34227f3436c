"""Frequentist estimators: the validating counterparts of the Bayesian models."""

__all__: list[str] = []
