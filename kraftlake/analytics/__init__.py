"""Questions operators ask, answered with Spark SQL over the warehouse (scales with a Spark cluster)."""
