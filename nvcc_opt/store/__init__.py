"""The SQLite store of regions, compiles, rewrites and review decisions.

This package imports nothing on purpose: the launcher imports `nvcc_opt.store.fast` on every
compile and must not pay for SQLAlchemy. Import `nvcc_opt.store.api` for the full `Store`.
"""
