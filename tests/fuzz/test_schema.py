"""The shipped JSON Schemas: current with their declarations, and of one verdict with the loaders.

On every case of the fuzz corpus (mutated catalogs and inventories, the shipped files): a file
the loader accepts, the schema accepts (an editor never flags a valid file), and a file the
schema accepts, the loader refuses only for a rule that relates tables, which a schema cannot
state (an SM outside its branch's CUDA range, an unknown ISA, a sibling package missing...).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ci_tools.base.errors import SourceError
from ci_tools.catalog import grammar, schema
from ci_tools.catalog.load import parse_catalog_text
from ci_tools.plan.runners import load_inventory

from . import harness, mutations

# What only the loader can say: rules relating one table to another, or one value to another.
RELATIONAL = re.compile(
    "|".join(
        [
            r"unknown ISA",
            r"unknown SM",
            r"is no package",
            r"requires itself",
            r"which requires",
            r"does not match its name",
            r"cuda_packages is .* but the branch's CUDA",
            r"needs CUDA|CUDA range|min_cuda|max_cuda|CUDA >=|CUDA <=|above|below",
            r"is not (one of )?(its|the) .*isas|only pairs with|pairs only with|restricted",
            r"needs .*-python",
            r"unknown package|no package named|not a package",
            r"platform",
            r"twice|duplicate",
            r"is no GPU of the catalog",
            r"versions do not name it",
            r"builds on its own",  # requires against attribute: the builder a package gets
        ]
    )
)


def _plain(data: Any) -> Any:
    """The document as JSON sees it (keys are strings), without losing surrogates."""
    if isinstance(data, dict):
        return {str(k): _plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return data


def _size(data: Any, limit: int = 100_000) -> int:
    """How many values the document has once its aliases are expanded (stops at `limit`)."""
    count, stack = 0, [data]
    while stack and count < limit:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


# U+0085, U+2028 and U+2029 are line breaks to YAML 1.1 (libyaml, the loader's parser) and
# characters to YAML 1.2 (editors); ruamel's pure parser, which reads the documents here,
# takes them for either depending on where they stand. The loader refuses a text that holds
# one anywhere, so no reading of such a text is a document the loader and an editor share.
DISPUTED_BREAKS = "\x85\u2028\u2029"


def _schema_ok(validator: jsonschema.protocols.Validator, text: str) -> bool | None:
    """The schema's verdict, or None where the text is no YAML document (or one that parsers
    read differently), or one that only exists as a graph (an alias bomb: expanded for JSON it
    has billions of values)."""
    if any(char in text for char in DISPUTED_BREAKS) or "\ufeff" in text[1:]:
        return None  # read differently by parsers; a BOM past the start (YAML 1.2 §5.2) too
    try:
        data = mutations.load(text)
    except Exception:
        return None
    if _size(data) >= 100_000:
        return None
    return not any(True for _ in validator.iter_errors(_plain(data)))


def test_the_shipped_schemas_are_current() -> None:
    for name in schema.FILES:
        assert schema.shipped(name) == schema.text(name), "run `python3 -m ci_tools.catalog.schema`"


def test_the_schema_patterns_are_the_grammar() -> None:
    catalog = schema.catalog_schema()
    assert (
        catalog["properties"]["gpus"]["propertyNames"]["pattern"] == f"^(?:{grammar.SM.pattern})$"
    )
    assert (
        catalog["$defs"]["isa"]["properties"]["disables"]["items"]["pattern"]
        == f"^(?:{grammar.FEATURE.pattern})$"
    )
    for definition in (schema.catalog_schema(), schema.runners_schema()):
        jsonschema.Draft202012Validator.check_schema(definition)


@pytest.mark.parametrize("name", ["catalog", "runners"])
def test_the_yaml_files_name_their_schema(name: str) -> None:
    first = (harness.REPO_ROOT / f"{name}.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == f"# yaml-language-server: $schema=./ci_tools/catalog/schema/{name}.schema.json"
    assert (harness.REPO_ROOT / "ci_tools" / "catalog" / "schema" / f"{name}.schema.json").is_file()


def _verdicts(
    name: str, cases: list[mutations.Case], loader: Any, tmp_path: Path
) -> dict[str, int]:
    validator = jsonschema.Draft202012Validator(json.loads(schema.text(name)))
    seen = {"agree": 0, "relational": 0, "no document": 0}
    for case in cases:
        schema_ok = _schema_ok(validator, case.text)
        try:
            loader(case.text, tmp_path)
            problems: list[str] = []
        except SourceError as exc:
            problems = [p.message for p in exc.problems]
        where = f"{name}: {case.label}"
        if schema_ok is None:
            assert problems, f"{where}: the loader accepted what is no YAML document"
            seen["no document"] += 1
            continue
        if not problems:
            assert schema_ok, f"{where}: the loader accepts what the schema refuses"
            seen["agree"] += 1
        elif not schema_ok:
            seen["agree"] += 1
        else:
            unexplained = [p for p in problems if not RELATIONAL.search(p)]
            assert not unexplained, (
                f"{where}: the schema accepts what the loader refuses: {unexplained}"
            )
            seen["relational"] += 1
    return seen


def _load_runners(text: str, tmp_path: Path) -> None:
    path = tmp_path / "runners.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    load_inventory(path, "runners.yaml")


def test_schema_and_loader_agree_on_the_fuzz_corpus(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 4)
    count = 1000 if fuzz_long else 60
    catalog = (harness.REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    runners = (harness.REPO_ROOT / "runners.yaml").read_text(encoding="utf-8")
    catalog_cases = [mutations.Case(label="shipped", text=catalog, structural=True)]
    catalog_cases += list(mutations.mutate_yaml(catalog, rng, count))
    runner_cases = [mutations.Case(label="shipped", text=runners, structural=True)]
    runner_cases += list(mutations.mutate_yaml(runners, rng, count // 2))
    seen_catalog = _verdicts(
        "catalog", catalog_cases, lambda text, _: parse_catalog_text(text, "catalog.yaml"), tmp_path
    )
    seen_runners = _verdicts("runners", runner_cases, _load_runners, tmp_path)
    with capsys.disabled():
        print(f"\nschema vs loader: catalog {seen_catalog}; runners {seen_runners}")
    assert seen_catalog["agree"] > count // 2 and seen_runners["agree"] > count // 4
