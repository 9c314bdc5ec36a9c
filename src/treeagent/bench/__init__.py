"""Benchmark construction: sources -> units/records -> tasks -> contexts -> validation."""
