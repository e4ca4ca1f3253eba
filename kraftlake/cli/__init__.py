"""The `kraftlake` command (`main.py`, one module per subcommand in `commands/`) and what only it runs: the local
broker and Kafka node, Kafka's own tools, the demo. Imported by nothing but the tests."""

import os

# Arrow's jemalloc pool for every command, named before pyarrow is first imported (Arrow reads it once): the
# default (mimalloc) hands freed buffers back to the OS and faults them in again, zeroing huge pages (a
# 1M-partition `image --json`: 0.95-1.26 s of system time, 0.61-0.69 s with jemalloc). A user's own setting wins;
# builds without jemalloc keep their default.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
