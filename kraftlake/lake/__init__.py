"""The lake: the warehouse's layout, the sink that publishes images, the reader (`reader.WarehouseReader`:
every read, time travel included) and maintenance.

What users import to write and read a kraftlake warehouse; it knows nothing of Spark or Kafka (`jobs/` holds
the spark-submit entry points and the Kafka source).
"""
