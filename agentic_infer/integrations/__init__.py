"""Optional integrations with other frameworks (each imports its framework lazily): `langgraph`."""
