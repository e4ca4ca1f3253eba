"""A broker simulator: simulated brokers and an operator driving the controller through its admin API (used by
`kraftlake simulate`, the demo and the controller benchmark)."""
