"""`ci-tools test`: prove a built variant is the variant it claims to be.

probe.py   runs inside the variant's own interpreter and reports facts (stdlib + torch only)
expect.py  the catalog's expectations for one variant (pure)
evaluate.py  facts + expectations -> checks (pure: the GPU run and the unit tests share it)
runner.py  the host side: find the interpreter, guard the host, run the probe, parse its output
"""
