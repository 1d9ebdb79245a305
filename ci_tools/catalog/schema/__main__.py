"""`python3 -m ci_tools.catalog.schema`: rewrite the shipped schemas from ci_tools.catalog.tables."""

from ci_tools.catalog.schema import main

main()
