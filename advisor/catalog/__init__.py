"""The hardware and cloud catalog: schema, loading with overlays, lookup, importers."""
