"""`python -m tests.fuzz.smoke TARGET...`: each target over its seeds, its regression inputs and a few
thousand deterministic mutations (bit flips, truncations, length fields set to huge or negative values), in
a process whose address space is capped (tests.fuzz.limits). Prints one line per target; exits 1 with the
failing inputs written to --failures when a reader broke the invariant. Needs no atheris."""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from tests.fuzz.corpus import regressions, seeds
from tests.fuzz.limits import SECONDS_PER_INPUT, cap_address_space
from tests.fuzz.targets import TARGETS, run

MUTATIONS_PER_TARGET = 3000
SLOW_TARGETS = {"log_dir": 1500, "replay_records": 1500}  # a file written, or batches built, per input
# What a length field is set to: the 2 GiB claim, the largest int32, -1, and their varint (zig-zag) forms.
HUGE_FIXED = (b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\xff\xff")
HUGE_VARINTS = (b"\xfe\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08", b"\x01", b"\xff\xff\xff")


def mutations(seed: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    """`count` damaged copies of `seed`: a third bit flips, a third truncations, a third huge lengths."""
    if not seed:
        return
    for index in range(count):
        kind = index % 3
        position = rng.randrange(len(seed))
        if kind == 0:
            damaged = bytearray(seed)
            for _ in range(rng.choice((1, 1, 2, 8))):
                damaged[rng.randrange(len(seed))] ^= 1 << rng.randrange(8)
            yield bytes(damaged)
        elif kind == 1:
            yield seed[:position]
        else:
            claim = rng.choice(HUGE_FIXED + HUGE_VARINTS)
            yield seed[:position] + claim + seed[position + len(claim) * rng.randrange(2) :]


def inputs(target: str, count: int) -> Iterator[bytes]:
    """Seeds, regressions, then `count` mutations spread over the seeds (the same ones on every run)."""
    base = seeds(target)
    yield from base
    for path in regressions(target):
        yield path.read_bytes()
    rng = random.Random(target)
    per_seed = max(1, count // len(base))
    for seed in base:
        yield from mutations(seed, rng, per_seed)


def smoke(target: str, count: int, failures: Path) -> tuple[int, float, list[str]]:
    """(inputs run, slowest seconds, one line per failing input)."""
    found: list[str] = []
    slowest = 0.0
    total = 0
    for data in inputs(target, count):
        total += 1
        started = time.perf_counter()
        try:
            run(TARGETS[target], data)
        except Exception as error:  # anything else is what the smoke exists to catch
            found.append(_save(failures, target, data, "".join(traceback.format_exception_only(error)).strip()))
            continue
        elapsed = time.perf_counter() - started
        slowest = max(slowest, elapsed)
        if elapsed > SECONDS_PER_INPUT:
            found.append(_save(failures, target, data, f"took {elapsed:.1f} s"))
    return total, slowest, found


def _save(folder: Path, target: str, data: bytes, why: str) -> str:
    path = folder / target / hashlib.sha1(data).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"{path}: {why}"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.smoke", description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"default: all of {', '.join(TARGETS)}")
    parser.add_argument("--mutations", type=int, help=f"per target (default {MUTATIONS_PER_TARGET}, fewer for "
                        f"{', '.join(SLOW_TARGETS)})")
    parser.add_argument("--failures", type=Path, default=Path("build/fuzz-failures"))
    args = parser.parse_args()
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s) {', '.join(sorted(unknown))}")
    cap_address_space()
    failed = False
    for target in args.targets or TARGETS:
        started = time.perf_counter()
        count = args.mutations or SLOW_TARGETS.get(target, MUTATIONS_PER_TARGET)
        total, slowest, found = smoke(target, count, args.failures)
        print(f"{target}: {total} inputs in {time.perf_counter() - started:.1f} s, slowest {slowest * 1000:.0f} ms, "
              f"{len(found)} failing")
        for line in found[:20]:
            print("  " + line)
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
