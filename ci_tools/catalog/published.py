"""A variant of a repository without a catalog, as its recipe's file name says it.

A record of the catalog's model (`Branch.published`), apart from `model` so that a catalog
that has its variants (every `ci-tools matrix` of a catalog) does not create it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.catalog.model import Kind


@dataclass(frozen=True, kw_only=True)
class Published:
    """A variant of a repository without a catalog, as the file name of its recipe says it:
    the name it is published under (aliases and build suffix included) and its facts."""

    name: str
    package: str
    python: str
    kind: Kind
    toolkit: str | None  # "cuda12_8" for a GPU variant
    sm: str | None
    isa: str | None  # the grammar's name ("armv8_2" where the name says "armv8.2")
