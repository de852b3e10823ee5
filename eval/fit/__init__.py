"""Fitting and cross-validation of the ranking's and the hooks' constants (see README.md)."""
