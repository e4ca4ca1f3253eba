"""The lake: the warehouse's layout, the sink that publishes images, the reader (`reader.WarehouseReader`:
every read, time travel included), maintenance, and the pipelines that feed the sink (`ingest` of a
directory, `topic_replay` of the metadata topic's messages).

What users import to write and read a kraftlake warehouse; it knows nothing of Spark or of Kafka clients
(`jobs/` holds the spark-submit entry points and Spark's Kafka source, which hand the messages over).
"""
