"""CI: ``boostlib[dask]`` as a new user's pip resolves it, in a clean virtual environment.

Run by ``.ci/run`` with the fresh environment's interpreter, from the checkout, after the
release build compiled the kernels in place::

    python .ci/extra_dask.py resolve REPORT.json REQUIREMENTS.txt
    PYTHONPATH=. python .ci/extra_dask.py train

``resolve`` turns pip's ``--dry-run --report`` of ``.[dask]`` into pinned requirements (without
boostlib itself) and checks that dask and distributed are one release; ``train`` imports
boostlib.dask with the releases installed from them and fits on a two-worker cluster.
"""
import json
import sys


def resolve(report_path, requirements_path):
    with open(report_path) as fh:
        report = json.load(fh)
    pins = {item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in report["install"]}
    pins.pop("boostlib", None)
    print(f"resolved: dask {pins.get('dask')}, distributed {pins.get('distributed')}")
    if pins.get("dask") != pins.get("distributed"):
        sys.exit("dask and distributed resolved to releases that do not match")
    with open(requirements_path, "w") as fh:
        fh.write("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))


def train():
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster

    from boostlib.dask import DaskBoostClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(int)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, \
            Client(cluster) as client:
        model = DaskBoostClassifier(client=client, n_estimators=5, random_state=0)
        model.fit(da.from_array(X, chunks=500), da.from_array(y, chunks=500))
        accuracy = float((model.predict(X) == y).mean())
    if accuracy < 0.7:
        sys.exit(f"boostlib[dask] trained a model of accuracy {accuracy:.3f}")
    print(f"boostlib[dask] in a clean environment: trained, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "resolve":
        resolve(sys.argv[2], sys.argv[3])
    else:
        train()
