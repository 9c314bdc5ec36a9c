"""Inference engines behind one async protocol, the call cache/journal and the scheduler."""
