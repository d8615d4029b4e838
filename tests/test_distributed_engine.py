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


def _distributed(params, X, y, n_workers, weight=None, seed=1, init_score=None,
                 valid=()):
    """Models of ``n_workers`` simulated workers on uneven row ranges of (X, y) (and of
    the rows' offsets ``init_score``); ``valid``: validation sets every worker scores."""
    full = Dataset(X, y, sample_weight=weight)
    mapper, _ = full.training_matrix(255, seed_sequence(params.get("random_state")), 1)
    p, bias = distributed_start(params, y, weight, offsets=init_score is not None)
    parts = split_rows(X.shape[0], n_workers, seed)

    def fit(collective, rows):
        part = Dataset(X[rows], y[rows], sample_weight=None if weight is None else weight[rows],
                       init_score=None if init_score is None else init_score[rows])
        return train(p, part, shard=Shard(collective, mapper, bias, X.shape[0]),
                     valid_sets=[Dataset(Xv, yv, init_score=iv, reference=part)
                                 for Xv, yv, iv in valid])

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


@pytest.mark.parametrize("policy", ["symmetric", "lossguide"])
def test_workers_fit_the_local_linear_leaves(policy):
    """Each leaf's slopes are solved from sums joined across the workers (about centres every
    worker shares), so the workers grow the local model."""
    X, y = _data(n=3000)
    params = dict(n_estimators=8, grow_policy=policy, random_state=1, n_jobs=1,
                  linear_leaves=True, linear_lambda=0.1)
    local = train(params, Dataset(X, y))
    assert local.ensemble.has_linear
    for model in _distributed(params, X, y, 3):
        np.testing.assert_allclose(model.predict(X), local.predict(X), rtol=0, atol=1e-9)


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


def _target_for(loss, score, rng):
    """A target of ``loss`` (one a distributed fit takes) that follows ``score``."""
    if loss in ("logloss", "sla"):
        return (score > 0).astype(float)
    if loss == "multiclass":
        return np.digitize(score, [-0.5, 0.5]).astype(float)
    if loss in ("poisson", "tweedie"):
        return rng.poisson(np.exp(0.5 * score - 0.5)).astype(float)
    if loss == "gamma":
        return rng.gamma(2.0, np.exp(0.3 * score) / 2.0)
    return score + 0.3 * rng.normal(size=score.size)        # mse, huber


@pytest.mark.parametrize("loss", ["mse", "huber", "logloss", "sla", "multiclass", "poisson",
                                  "tweedie", "gamma"])
def test_offsets_give_the_local_model_for_every_loss(loss):
    """Workers each holding their rows' offsets grow the model one machine grows from the
    same offsets: a bias of 0 (the offsets replace the start), the same trees, and the
    same validation losses (whose offsets every worker holds)."""
    X, _ = _data(n=3000, seed=9)
    rng = np.random.default_rng(9)
    score = np.nansum(X[:, :3], axis=1)
    y = _target_for(loss, score, rng)
    n_outputs = 3 if loss == "multiclass" else 1
    init_score = rng.normal(scale=0.5, size=(X.shape[0], n_outputs)) + 0.2
    if n_outputs == 1:
        init_score = init_score[:, 0]
    if loss in ("poisson", "tweedie", "gamma"):
        init_score = init_score + np.log(np.maximum(y.mean(), 1e-3))
    params = dict(n_estimators=12, grow_policy="depthwise", random_state=3, n_jobs=1,
                  loss=loss, learning_rate=0.3)
    valid = [(X[:500], y[:500], init_score[:500])]
    local = train(params, Dataset(X, y, init_score=init_score),
                  valid_sets=[Dataset(X[:500], y[:500], init_score=init_score[:500])])
    assert np.array_equal(local.ensemble.bias_array, np.zeros(n_outputs))
    models = _distributed(params, X, y, 3, init_score=init_score, valid=valid)
    for model in models:
        assert np.array_equal(model.ensemble.bias_array, np.zeros(n_outputs))
        np.testing.assert_allclose(model.predict(X, raw=True, init_score=init_score),
                                   local.predict(X, raw=True, init_score=init_score),
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(model.evals_result["valid_0"][loss],
                                   local.evals_result["valid_0"][loss], rtol=1e-12)
    # the offsets matter: without them the workers' model is another one
    plain = _distributed(params, X, y, 3)[0]
    assert not np.allclose(plain.predict(X, raw=True), models[0].predict(X, raw=True))


def test_a_shard_with_offsets_starts_from_them_alone():
    """Offsets replace the loss's start: a Shard whose bias is not 0 is refused."""
    X, y = _data(n=400)
    from reference.thread_collective import ThreadGroup
    mapper, _ = Dataset(X, y).training_matrix(255, seed_sequence(0), 1)
    with pytest.raises(ValueError, match=r"init_score.*bias must be 0.*offsets=True"):
        train(dict(n_estimators=2, n_jobs=1), Dataset(X, y, init_score=np.zeros(400)),
              shard=Shard(ThreadGroup(1).members[0], mapper, np.array([0.5]), 400))


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
