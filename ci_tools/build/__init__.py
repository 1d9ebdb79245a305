"""Building and proving a variant: flox build, the smoke checks, result records and the report."""
