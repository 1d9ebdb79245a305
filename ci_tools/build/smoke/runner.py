"""The host side of `ci-tools test`: find the interpreter, guard the host, run the probe,
turn its output into facts.

Nothing of the build runs before the guard has compared the host with the build: a build for
a platform or CPU features the host lacks is skipped with that reason, never started (it would
die of SIGILL). The probe runs from a private temporary folder so that no file beside it can
shadow a module torch imports.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ci_tools.base import proc
from ci_tools.base.errors import InputError
from ci_tools.build.results import Check, Figures, Library
from ci_tools.build.smoke import binary
from ci_tools.build.smoke.evaluate import evaluate, skip_all, static_proofs
from ci_tools.build.smoke.expect import Expectations
from ci_tools.build.smoke.probe import MARKER
from ci_tools.catalog.model import Kind

PREFLIGHT_TIMEOUT = 120.0
PROBE_TIMEOUT = 900.0
IMPORT_TIMEOUT = 300.0
# `import torch` is timed in this many fresh interpreters; the median discards a cold first
# read of the libraries from disk and a neighbour's burst on a shared runner.
IMPORT_RUNS = 5

# Variables that change what the probe measures: ATen's dispatch level must be the host's own.
_MASKED_ENV = ("ATEN_CPU_CAPABILITY",)


@dataclass(frozen=True, kw_only=True)
class Interpreter:
    path: str
    python: str  # "3.13.1"
    torch_origin: str
    libraries: tuple[Library, ...] = ()
    package_bytes: int | None = None  # site-packages/torch, read before any of it runs


@dataclass(frozen=True, kw_only=True)
class ProbeOutput:
    facts: Mapping[str, Any]
    crash: str | None  # why the probe stopped before it finished, if it did


@dataclass(frozen=True, kw_only=True)
class SmokeRun:
    checks: tuple[Check, ...]
    interpreter: Interpreter | None  # None when the host could not run the build at all
    figures: Figures | None = None


def resolve_python(spec: str, env: Mapping[str, str]) -> str:
    """`--python` as given: a path to an executable file, or a name found on PATH."""
    if os.sep in spec or (os.altsep is not None and os.altsep in spec):
        path = Path(spec)
        if not path.is_file():
            raise InputError(f"--python {spec}: no such file")
        if not os.access(path, os.X_OK):
            raise InputError(f"--python {spec}: not an executable file")
        return str(path)
    if proc.which(spec, env) is None:
        raise InputError(f"--python {spec}: not found on PATH")
    return spec


def host_guard(
    expect: Expectations, host_platform: str | None, host_flags: Collection[str]
) -> str | None:
    """Why this host must not run the build's code at all, or None when it may. Pure."""
    if host_platform != expect.platform:
        host = host_platform or "unknown-platform"
        return f"a {expect.platform} build cannot run on this {host} host"
    missing = [flag for flag in expect.cpuinfo if flag not in host_flags]
    if missing:
        return (
            f"this host's CPU lacks {' '.join(missing)} (/proc/cpuinfo), which {expect.isa} "
            "builds need; their code would die of SIGILL here"
        )
    return None


def probe_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k not in _MASKED_ENV}


def parse_output(stdout: str) -> tuple[dict[str, Any], str | None, bool]:
    """The probe's marked JSON lines -> (facts, the step begun but never reported, done)."""
    facts: dict[str, Any] = {}
    pending: str | None = None
    done = False
    for line in stdout.splitlines():
        if not line.startswith(MARKER):
            continue
        try:
            record = json.loads(line[len(MARKER) :])
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if "begin" in record:
            pending = str(record["begin"])
        elif "fact" in record:
            key = str(record["fact"])
            facts[key] = record.get("value")
            if key == pending:
                pending = None
        elif record.get("done"):
            done = True
            pending = None
    return facts, pending, done


def crash_reason(result: proc.CommandResult, pending: str | None, done: bool) -> str | None:
    """Why the probe stopped before it finished; None when it finished."""
    if done and result.ok:
        return None
    during = f" during {pending}" if pending else ""
    if result.timed_out:
        return f"the interpreter timed out after {result.seconds:.0f} s{during}"
    if result.returncode < 0:
        try:
            name = signal.Signals(-result.returncode).name
        except ValueError:
            name = f"signal {-result.returncode}"
        return f"the interpreter was killed by {name}{during}"
    last = [line for line in result.stderr.strip().splitlines() if line.strip()][-3:]
    said = f": {' | '.join(last)}" if last else ""
    return f"the interpreter exited with status {result.returncode}{during}{said}"


def preflight(python: str, env: Mapping[str, str]) -> Interpreter:
    """Prove `python` is a Python with torch on its path, without running torch's code."""
    result = _run_probe(python, ["preflight"], env, PREFLIGHT_TIMEOUT, what="run")
    facts, _, done = parse_output(result.stdout)
    if not done or "python" not in facts:
        reason = crash_reason(result, None, done) or "it reported nothing"
        raise InputError(f"{python} is not a Python interpreter ci-tools can use: {reason}")
    origin = facts.get("torch.origin")
    if not origin:
        raise InputError(
            f"{python} (Python {facts['python']}) has no torch on its path: "
            "point --python or --result at the variant's build"
        )
    return Interpreter(
        path=str(facts.get("executable") or python),
        python=str(facts["python"]),
        torch_origin=str(origin),
        libraries=libraries_of(facts),
        package_bytes=_byte_count(facts.get("torch.package_bytes")),
    )


def check_python(interpreter: Interpreter, want: str, variant: str) -> None:
    """A named interpreter of another Python than the variant's tests nothing of the build:
    its torch is not the build's (a python313 build cannot load into 3.11). Bad input."""
    have = ".".join(interpreter.python.split(".")[:2])
    if have != want:
        raise InputError(
            f"--python {interpreter.path} is Python {interpreter.python}, but {variant} is "
            f"built for Python {want}: name a Python {want} interpreter that has the build on "
            f"its path, or test the build itself (--result DIR, default ./result-{variant})"
        )


def _byte_count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def libraries_of(facts: Mapping[str, Any]) -> tuple[Library, ...]:
    sizes = facts.get("torch.libraries")
    if not isinstance(sizes, dict):
        return ()
    return tuple(
        Library(name=str(name), bytes=size)
        for name, size in sorted(sizes.items())
        if type(size) is int and size >= 0
    )


def import_seconds(python: str, env: Mapping[str, str], runs: int) -> float | None:
    """The median wall time of `import torch` over `runs` fresh interpreters; None when any
    run failed to report (the checks say why)."""
    times = []
    for _ in range(runs):
        result = _run_probe(python, ["import-time"], env, IMPORT_TIMEOUT, what="start")
        facts, _, done = parse_output(result.stdout)
        value = facts.get("import.seconds")
        if not (done and result.ok) or type(value) is not float:
            return None
        times.append(value)
    return round(statistics.median(times), 4) if times else None


def run_probe(python: str, expect: Expectations, env: Mapping[str, str]) -> ProbeOutput:
    config = json.dumps(expect.probe_config(), sort_keys=True)
    result = _run_probe(python, ["run", config], env, PROBE_TIMEOUT, what="start")
    facts, pending, done = parse_output(result.stdout)
    return ProbeOutput(facts=facts, crash=crash_reason(result, pending, done))


STATIC_REASON = (
    "no runner of the fleet runs it (the route is static): proven from its files, not run"
)


def smoke_test(
    expect: Expectations,
    python: str,
    *,
    host_platform: str | None,
    host_flags: Collection[str],
    env: Mapping[str, str],
    import_runs: int = IMPORT_RUNS,
    static: bool = False,
    python_version: str | None = None,
) -> SmokeRun:
    """Run the checks this host can run; with `static`, or where the host must not run the
    build's code, only the proofs read from its files (`static_run`). `python_version`
    ("3.13"): the Python a named interpreter must be, the variant's."""
    if host_platform != expect.platform:
        reason = host_guard(expect, host_platform, host_flags)
        assert reason is not None
        return SmokeRun(checks=skip_all(expect, reason), interpreter=None)
    interpreter = preflight(python, env)
    if python_version is not None:
        check_python(interpreter, python_version, expect.variant)
    reason = STATIC_REASON if static else host_guard(expect, host_platform, host_flags)
    if reason is not None:
        return static_run(expect, interpreter, env, reason)
    output = run_probe(python, expect, env)
    facts = dict(output.facts)
    if expect.kind is Kind.GPU:
        facts["sass"] = binary.sass_fact(facts, env)
    imported = facts.get("import:torch")
    seconds = None
    if isinstance(imported, Mapping) and imported.get("ok") and import_runs > 0:
        seconds = import_seconds(python, env, import_runs)
    figures = Figures(
        libraries=libraries_of(facts) or interpreter.libraries,
        import_seconds=seconds,
        import_runs=import_runs if seconds is not None else 0,
        package_bytes=interpreter.package_bytes,
    )
    return SmokeRun(
        checks=evaluate(facts, expect, output.crash), interpreter=interpreter, figures=figures
    )


def static_run(
    expect: Expectations, interpreter: Interpreter, env: Mapping[str, str], reason: str
) -> SmokeRun:
    """The sizes, the SASS listing and the ISA's instructions come from the files alone: they
    need none of the build's code to run, so a host that must not run it still gets them.
    (The preflight ran the interpreter, which torch's build flags do not touch, and imported
    nothing of torch.)"""
    lib_dir = str(Path(interpreter.torch_origin).parent / "lib")
    facts: dict[str, Any] = {
        "torch.lib_dir": lib_dir,
        "torch.libraries": {lib.name: lib.bytes for lib in interpreter.libraries},
    }
    if expect.kind is Kind.GPU:
        facts["sass"] = binary.sass_fact(facts, env)
    if expect.isa is not None:
        facts["isa"] = binary.isa_fact(facts, expect, env)
    return SmokeRun(
        checks=static_proofs(facts, expect, reason),
        interpreter=interpreter,
        figures=Figures(libraries=interpreter.libraries, package_bytes=interpreter.package_bytes),
    )


def _run_probe(
    python: str, args: list[str], env: Mapping[str, str], timeout: float, *, what: str
) -> proc.CommandResult:
    source = (
        resources.files("ci_tools.build.smoke").joinpath("probe.py").read_text(encoding="utf-8")
    )
    with tempfile.TemporaryDirectory(prefix="ci-tools-smoke-") as folder:
        script = Path(folder) / "ci_tools_smoke_probe.py"
        script.write_text(source, encoding="utf-8")
        # Fresh compile caches: a cached kernel from an earlier run would let torch.compile
        # pass without the compiler the check is there to prove.
        caches = {
            "TORCHINDUCTOR_CACHE_DIR": str(Path(folder) / "inductor"),
            "TRITON_CACHE_DIR": str(Path(folder) / "triton"),
        }
        try:
            return proc.run(
                [python, str(script), *args],
                cwd=Path(folder),
                env={**probe_env(env), **caches},
                timeout=timeout,
            )
        except InputError as exc:
            raise InputError(
                f"{python} is not a Python interpreter ci-tools can {what}: {exc}"
            ) from None
