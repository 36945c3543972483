"""PySpark duplicate audit of replicated messages across regions (see spark/README.md)."""
