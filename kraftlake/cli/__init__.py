"""The `kraftlake` command (`main.py`, one module per subcommand in `commands/`) and what only it runs: the local
broker and Kafka node, Kafka's own tools, the demo. Imported by nothing but the tests."""
