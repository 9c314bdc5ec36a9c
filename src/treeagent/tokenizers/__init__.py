"""Tokenizers by name behind one protocol (Qwen3/Qwen2.5 from tiktoken files, chonkie-style token counters)."""
