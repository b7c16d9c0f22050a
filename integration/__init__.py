"""Harnesses that run nvcc-opt on a user's own checkout of a real application."""
