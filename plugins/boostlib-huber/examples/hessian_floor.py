"""How the Newton hessian floor of the Huber loss trades speed for caution.

Trains BoostRegressor(loss="boostlib_huber") with several ``hessian_floor`` values on data with 10%
heavy-tailed (Cauchy) outliers and prints the RMSE against the noiseless target on fresh
rows. ``--scale`` multiplies the signal, i.e. how many ``delta`` the residuals are large.

    python examples/hessian_floor.py --scale 1
    python examples/hessian_floor.py --scale 5
"""
from __future__ import annotations

import argparse

import numpy as np

from boostlib import BoostRegressor, available, registry


def data(n: int, seed: int, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    f = scale * (2 * np.sin(X[:, 0]) + X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.5 * X[:, 4])
    y = f + rng.normal(0, 0.5, n)
    bad = rng.random(n) < 0.1
    y[bad] += rng.standard_cauchy(bad.sum()) * 20
    return X, y, f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1.0)
    parser.add_argument("--floors", default="0.05,0.1,0.2,0.5,1.0")
    parser.add_argument("--trees", default="100,300")
    args = parser.parse_args()
    if "boostlib_huber" not in available("loss"):   # running from a source checkout
        import boostlib_huber
        registry.register_plugin(boostlib_huber, "boostlib_huber")
    X, y, _ = data(20_000, 0, args.scale)
    Xt, _, ft = data(5_000, 1, args.scale)
    trees = [int(t) for t in args.trees.split(",")]
    print(f"scale {args.scale:g}, delta {args.delta:g}: test RMSE vs the noiseless target")
    print(f"{'hessian_floor':>13} " + " ".join(f"{t:>6} trees" for t in trees))
    for floor in (float(v) for v in args.floors.split(",")):
        row = []
        for n in trees:
            model = BoostRegressor(loss="boostlib_huber", n_estimators=n, random_state=0,
                                   loss_params={"delta": args.delta, "hessian_floor": floor})
            model.fit(X, y)
            row.append(float(np.sqrt(np.mean((model.predict(Xt) - ft) ** 2))))
        print(f"{floor:>13g} " + " ".join(f"{r:>12.3f}" for r in row), flush=True)


if __name__ == "__main__":
    main()
