"""The answer checks measured on the corpus (tests/fixtures/answer_checks): how often an
honest answer gets a warning (false positives, to be kept very low), how often a dishonest
one gets the warning of its kind, and what a check costs.

    python bench/bench_answer_checks.py            # the figures
    python bench/bench_answer_checks.py --show     # also every case that went wrong
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from answer_corpus import kind_of, load_cases, read_only_tools, warnings_for  # noqa: E402


def main(show: bool) -> int:
    cases = load_cases()
    read_only = read_only_tools()
    false_positives, caught, wrong_kind = [], Counter(), []
    per_kind = Counter()
    timings = []
    for case in cases:
        started = time.perf_counter()
        warnings = warnings_for(case, read_only)
        timings.append(time.perf_counter() - started)
        kinds = {kind_of(w) for w in warnings}
        if case.honest:
            if warnings:
                false_positives.append((case.id, warnings))
            continue
        for kind in case.expect:
            per_kind[kind] += 1
            caught[kind] += kind in kinds
        if kinds - set(case.expect):
            wrong_kind.append((case.id, warnings))
    honest = sum(c.honest for c in cases)
    dishonest = len(cases) - honest
    print(f"corpus: {honest} honest answers, {dishonest} dishonest ones")
    print(f"false positives: {len(false_positives)} of {honest} honest answers "
          f"({100 * len(false_positives) / honest:.1f}%)")
    found = sum(caught.values())
    print(f"dishonest claims caught: {found} of {sum(per_kind.values())}")
    for kind, count in sorted(per_kind.items()):
        print(f"  {kind}: {caught[kind]} of {count}")
    print(f"extra warnings of another kind on dishonest answers: {len(wrong_kind)}")
    print(f"time per answer: median {statistics.median(timings) * 1e6:.0f} µs, "
          f"max {max(timings) * 1e6:.0f} µs")
    if show:
        for case_id, warnings in false_positives + wrong_kind:
            print(f"- {case_id}: {warnings}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--show" in sys.argv[1:]))
