"""`python -m tests.fuzz TARGET --seconds N --corpus DIR`: coverage-guided fuzzing of one target with atheris
(libFuzzer). The corpus starts from the seeds of tests/fuzz/corpus.py; inputs that break the invariant are
written to --artifacts as crash-*/timeout-*/oom-* files: fix the reader, then copy the input to
tests/fuzz/regressions/TARGET/ so the smoke test replays it.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atheris

from tests.fuzz.limits import ADDRESS_SPACE_BYTES, SECONDS_PER_INPUT, cap_address_space

with atheris.instrument_imports(include=["records", "replay"]):
    from kraftlake.records import schema as record_schema
    from tests.fuzz import targets


def _instrument_generated_codecs() -> None:
    """The record body decoders are generated and compiled at run time (kraftlake.records.schema), where import-time
    instrumentation cannot see them: instrument each one as it is generated."""
    generate = record_schema._generate

    def instrumented(
        schema: record_schema.StructSchema, version: int
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        decode, encode = generate(schema, version)
        return atheris.instrument_func(decode), encode

    record_schema._generate = instrumented


def _seed(corpus: Path, target: str) -> None:
    from tests.fuzz.corpus import regressions, seeds

    corpus.mkdir(parents=True, exist_ok=True)
    inputs = seeds(target) + [path.read_bytes() for path in regressions(target)]
    for data in inputs:
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=sorted(targets.TARGETS))
    parser.add_argument("--seconds", type=int, default=180, help="how long to fuzz (default 180)")
    parser.add_argument("--corpus", type=Path, required=True, help="the corpus folder, seeded when empty")
    parser.add_argument("--artifacts", type=Path, default=Path("build/fuzz-artifacts"),
                        help="where inputs that break the invariant go (a folder per target)")
    args, libfuzzer_args = parser.parse_known_args()
    if not args.corpus.is_dir() or not any(args.corpus.iterdir()):
        _seed(args.corpus, args.target)
    artifacts = args.artifacts / args.target
    artifacts.mkdir(parents=True, exist_ok=True)
    target = targets.TARGETS[args.target]
    _instrument_generated_codecs()
    cap_address_space()
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={args.seconds}",
            f"-timeout={int(SECONDS_PER_INPUT) * 5}",
            f"-rss_limit_mb={ADDRESS_SPACE_BYTES >> 20}",
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
            *libfuzzer_args,
            str(args.corpus),
        ],
        lambda data: targets.run(target, data),
    )
    atheris.Fuzz()


if __name__ == "__main__":
    main()
