"""The result record: one versioned JSON file per variant, written by build, test and publish.

    {"schema": 2, "variant": ..., "package": ..., "branch": ..., "commit": ..., "runner": ...,
     "platform": ..., "build": {...} | null, "test": {...} | null, "publish": {...} | null}

The release trusts nothing else: a variant is published only when its record shows what the
publish policy (`ci_tools/build/policy.py`) asks of it. Every reader (report, test, publish, release) goes through `load`, which
checks the whole record against the schema (`validate`) and names the file and the field of
the first thing wrong (exit 2); a schema it does not know is refused rather than guessed at.

`records` holds the record types, `validate` the schema check of a record's JSON, `files` the
one loader and the writer; callers use them through this package.
"""

from ci_tools.build.results.files import (
    MAX_RECORD_BYTES,
    RESULT_SUFFIX,
    load,
    load_dir,
    parse,
    result_path,
    save,
)
from ci_tools.build.results.records import (
    CHECK_STATUSES,
    READABLE_SCHEMAS,
    SCHEMA,
    BuildOutcome,
    CacheOutcome,
    CacheStatus,
    Check,
    Figures,
    Library,
    Output,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Route,
    Sizes,
    Status,
    TestOutcome,
    test_status,
)
from ci_tools.build.results.validate import from_json

__all__ = [
    "CHECK_STATUSES",
    "MAX_RECORD_BYTES",
    "READABLE_SCHEMAS",
    "RESULT_SUFFIX",
    "SCHEMA",
    "BuildOutcome",
    "CacheOutcome",
    "CacheStatus",
    "Check",
    "Figures",
    "Library",
    "Output",
    "PublishOutcome",
    "PublishStatus",
    "ResultRecord",
    "Route",
    "Sizes",
    "Status",
    "TestOutcome",
    "from_json",
    "load",
    "load_dir",
    "parse",
    "result_path",
    "save",
    "test_status",
]
