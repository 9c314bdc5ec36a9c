"""Memory-agent workflows (MemAgent, InfMem, MemReread, ReMemR1) and their observations."""
