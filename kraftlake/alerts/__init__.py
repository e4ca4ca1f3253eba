"""Change alerts: an alerts file (TOML) selects changes of a warehouse's published images by table, key pattern
and condition; each matching change is sent once to Prometheus Alertmanager or a JSON webhook, with what it was
before and after, its offset and time and a link into the explorer. What was delivered is kept in the warehouse
(`kraftlake.alerts.state`), so a restart neither repeats nor loses an alert. Reads go through the warehouse's
reader only: the changes are the reader's, never derived again here."""
