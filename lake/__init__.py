"""The lake: Delta tables of a cluster's metadata history and the read APIs over them (delta-rs + Arrow, no Spark)."""
