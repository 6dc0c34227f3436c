"""The fused likelihood Ops the builders use (numba kernels, their JAX forms), each with its gradient."""
