"""The engine's distributed path without a cluster: workers simulated by threads
(``tests/reference/thread_collective.py``) each train on their rows with a
:class:`~boostlib.engine.shard.Shard`; the models must equal one machine's."""
import numpy as np
import pytest

from boostlib.engine.dataset import Dataset
from boostlib.engine.random_streams import Streams, seed_sequence
from boostlib.engine.shard import Shard
from boostlib.booster.training import distributed_start, train
from boostlib.plugin.collective import LOCAL, CollectiveError

from reference.thread_collective import run_workers, split_rows


def _data(n=6000, n_features=6, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nansum(X[:, :3], axis=1) + 0.5 * rng.normal(size=n)
    if classes == 2:
        y = (score > 0).astype(float)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
        y = y.astype(float)
    return X, y


def _distributed(params, X, y, n_workers, weight=None, seed=1):
    """Models of ``n_workers`` simulated workers on uneven row ranges of (X, y)."""
    full = Dataset(X, y, sample_weight=weight)
    mapper, _ = full.training_matrix(255, seed_sequence(params.get("random_state")), 1)
    p, bias = distributed_start(params, y, weight)
    parts = split_rows(X.shape[0], n_workers, seed)

    def fit(collective, rows):
        part = Dataset(X[rows], y[rows], sample_weight=None if weight is None else weight[rows])
        return train(p, part, shard=Shard(collective, mapper, bias, X.shape[0]))

    return run_workers(fit, parts)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
@pytest.mark.parametrize("n_workers", [1, 2, 3])
def test_workers_grow_the_local_model(policy, n_workers):
    X, y = _data()
    params = dict(n_estimators=20, grow_policy=policy, random_state=1, n_jobs=1,
                  min_samples_leaf=5)
    local = train(params, Dataset(X, y)).predict(X)
    models = _distributed(params, X, y, n_workers)
    for model in models:
        np.testing.assert_allclose(model.predict(X), local, rtol=0, atol=1e-9)


def test_weights_and_multiclass_follow_the_local_fit():
    X, y = _data(classes=3)
    w = np.random.default_rng(3).uniform(0.0, 2.0, X.shape[0])
    w[:50] = 0.0
    params = dict(n_estimators=10, grow_policy="depthwise", random_state=2, n_jobs=1,
                  loss="multiclass")
    local = train(params, Dataset(X, y, sample_weight=w)).predict(X)
    for model in _distributed(params, X, y, 2, weight=w):
        np.testing.assert_allclose(model.predict(X), local, rtol=0, atol=1e-9)


def test_worker_missing_a_class_learns_every_class():
    X, y = _data(classes=3)
    order = np.argsort(y, kind="stable")         # worker 0 sees classes 0 and 1 only
    X, y = X[order], y[order]
    params = dict(n_estimators=5, random_state=0, n_jobs=1, loss="multiclass")
    p, _ = distributed_start(params, y, None)
    assert p["loss_params"]["n_classes"] == 3
    models = _distributed(params, X, y, 2, seed=5)
    assert models[0].n_outputs == 3


@pytest.mark.parametrize("sampler", ["uniform", "goss", "mvs"])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_every_sampler_and_rule_keeps_workers_in_step(sampler, update):
    X, y = _data(n=3000)
    params = dict(n_estimators=8, grow_policy="depthwise", random_state=4, n_jobs=1,
                  sampler=sampler, subsample=0.5, update=update)
    models = _distributed(params, X, y, 2)
    np.testing.assert_array_equal(models[0].predict(X), models[1].predict(X))


def test_row_streams_differ_by_worker_and_shared_streams_agree():
    seed = seed_sequence(7)
    a, b = Streams(seed, rank=0), Streams(seed, rank=1)
    assert a.get("split_noise").random() == b.get("split_noise").random()
    assert a.rows("sampler").random() != b.rows("sampler").random()
    local = Streams(seed)
    assert local.rows("sampler").random() == Streams(seed).get("sampler").random()


def test_a_failing_worker_fails_every_worker(temp_plugin):
    X, y = _data(n=2000)
    from boostlib.api import UpdateRule, hookimpl

    class Fails(UpdateRule):
        name = "fails_on_rank_1"

        def begin(self, ctx):
            self.rank = ctx.collective.rank

        def step(self, ctx):
            if self.rank == 1 and ctx.iteration == 2:
                raise RuntimeError("boom on worker 1")
            g, h = ctx.gradients()
            ctx.add_tree(ctx.fit_tree(g, h), ctx.learning_rate)

    class Plugin:
        @hookimpl
        def boostlib_add_updates(self):
            return {"fails_on_rank_1": Fails}

    temp_plugin(Plugin(), "fails")
    with pytest.raises(Exception, match="boom on worker 1"):
        _distributed(dict(n_estimators=5, update="fails_on_rank_1", random_state=0,
                          n_jobs=1), X, y, 2)


def test_shard_refuses_what_does_not_distribute():
    X, y = _data(n=500)
    with pytest.raises(ValueError, match="renews its leaf values"):
        distributed_start(dict(loss="quantile"), y, None)
    with pytest.raises(ValueError, match="query groups"):
        distributed_start(dict(loss="lambdarank"), y, None)


def test_local_collective_is_the_identity():
    a = np.arange(5.0)
    assert LOCAL.allreduce(a) is a and not LOCAL.distributed
    assert LOCAL.total(2.0, 3.0).tolist() == [2.0, 3.0]
    assert issubclass(CollectiveError, RuntimeError)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
@pytest.mark.parametrize("sampler", ["goss", "mvs", "uniform"])
def test_a_worker_with_an_empty_sample_takes_part(policy, sampler):
    """A worker of 3 rows among 3000 often samples none of them: the fit goes on."""
    X, y = _data(n=3003)
    full = Dataset(X, y)
    params = dict(n_estimators=6, grow_policy=policy, random_state=2, n_jobs=1,
                  sampler=sampler, subsample=0.1)
    mapper, _ = full.training_matrix(255, seed_sequence(2), 1)
    p, bias = distributed_start(params, y, None)
    parts = [np.arange(3), np.arange(3, 3003)]

    def fit(collective, rows):
        return train(p, Dataset(X[rows], y[rows]), shard=Shard(collective, mapper, bias, 3003))

    small, big = run_workers(fit, parts)
    np.testing.assert_array_equal(small.predict(X), big.predict(X))


def test_uniform_sample_of_a_tiny_fit_is_never_empty_across_workers():
    X, y = _data(n=40)
    params = dict(n_estimators=30, grow_policy="depthwise", random_state=0, n_jobs=1,
                  sampler="uniform", subsample=0.01, min_child_weight=0.0)
    models = _distributed(params, X, y, 3)
    np.testing.assert_array_equal(models[0].predict(X), models[2].predict(X))
    assert np.any(models[0].predict(X, raw=True) != models[0].ensemble.bias)
