"""The catalog: its YAML source, value grammar, records, variants and names, the repository layout, and the JSON Schemas."""
