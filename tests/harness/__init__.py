"""Real quorum and controller processes on loopback, for the integration tests and the benchmark."""
