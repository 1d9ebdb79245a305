"""`python3 -m ci_tools.schema`: rewrite the shipped schemas from ci_tools.grammar."""

from ci_tools.schema import main

main()
