"""Time one draw of each built-in sampler on logloss derivatives (not a test).

Generates a million logloss derivatives (raw scores ``N(0, 2^2)``, labels drawn from the
model), then times ``sampler.sample(g, h, rng, iteration)`` of ``uniform``, ``goss`` (no
warm-up) and ``mvs`` at ``--subsample``, and prints the minimum and median over ``--repeats``
draws. Timings on shared machines drift; compare samplers within one run.

Usage::

    python benchmarks/bench_samplers.py [--n 1000000] [--threads 2] [--subsample 0.5]
"""
from __future__ import annotations

import argparse
import time
from typing import List, Optional

import numpy as np

from boostlib.builtin.samplers import GOSSSampler, MVSSampler, UniformSampler


class _Fit:
    """The two attributes a sampler's ``begin`` reads from the fit's context."""

    def __init__(self, learning_rate: float, n_threads: int):
        self.learning_rate = learning_rate
        self.n_threads = n_threads


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--subsample", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=40)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    z = 2.0 * rng.normal(size=args.n)
    p = 1.0 / (1.0 + np.exp(-z))
    y = (rng.random(args.n) < p).astype(np.float64)
    g, h = p - y, p * (1.0 - p)
    fit = _Fit(learning_rate=0.1, n_threads=args.threads)
    samplers = {"uniform": UniformSampler(args.subsample),
                "goss": GOSSSampler(args.subsample, warmup=False),
                "mvs": MVSSampler(args.subsample)}
    print(f"{args.n:,} rows, {args.threads} threads, subsample {args.subsample}, "
          f"{args.repeats} draws each")
    print("| sampler | min ms | median ms | rows kept |")
    print("|---|---:|---:|---:|")
    for name, sampler in samplers.items():
        sampler.begin(fit)
        draw_rng = np.random.default_rng(1)
        res = sampler.sample(g, h, draw_rng, 100)          # warm the buffers
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            res = sampler.sample(g, h, draw_rng, 100)
            times.append(time.perf_counter() - t0)
        kept = args.n if res is None else res.indices.size
        print(f"| {name} | {1e3 * min(times):.2f} | {1e3 * float(np.median(times)):.2f} | "
              f"{kept:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
