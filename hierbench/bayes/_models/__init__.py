"""The model builders: each ``build_<name>(data, ...)`` returns a PyMC model with its structure recorded."""
