"""bench/run's parts: systems under test, the load driver, the workloads and
the report. See bench/README.md."""
