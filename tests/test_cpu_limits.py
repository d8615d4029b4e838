"""The default thread count: the CPUs the process may use (affinity mask, cgroup v2 and v1
CPU quota, os.cpu_count()), with the control-group files faked in temporary folders."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from boostlib import BoostRegressor
from boostlib._kernels import _cpu_limits
from boostlib._kernels import _openmp
from boostlib._kernels._openmp import effective_n_threads, openmp_enabled, training_n_threads
from boostlib.builtin.losses import MSELoss


@pytest.mark.parametrize("text, expected", [
    ("max 100000\n", None),
    ("max\n", None),
    ("200000 100000\n", 2),
    ("150000 100000\n", 2),          # 1.5 CPUs: 2 threads (ceil)
    ("50000 100000\n", 1),           # half a CPU: still 1
    ("100000\n", 1),                 # the period defaults to the kernel's 100000
    ("400000 50000", 8),
    ("", None),
    ("abc 100000", None),
    ("200000 abc", None),
    ("1.5 1", None),
    ("0 100000", None),
    ("-5 100000", None),
    ("100000 0", None),
    ("1 2 3", None),
    (None, None),
])
def test_cpu_max_text(text, expected):
    assert _cpu_limits.parse_cpu_max(text) == expected


@pytest.mark.parametrize("quota, period, expected", [
    ("-1\n", "100000\n", None),
    ("250000\n", "100000\n", 3),
    ("100000", "100000", 1),
    ("1", "100000", 1),
    ("x", "100000", None),
    ("200000", "", None),
    ("200000", None, None),
    (None, "100000", None),
    ("0", "100000", None),
])
def test_cfs_quota_text(quota, period, expected):
    assert _cpu_limits.parse_cfs(quota, period) == expected


def _proc(tmp_path, mountinfo, cgroup):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return str(proc)


def _write(folder, **files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text)


def _v2_line(point, root="/"):
    return f"30 23 0:26 {root} {point} rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n"


def _v1_line(point, root="/", options="rw,cpu,cpuacct"):
    return f"32 31 0:29 {root} {point} rw,relatime - cgroup cgroup {options}\n"


OTHER_MOUNTS = ("22 1 253:1 / / rw,relatime - ext4 /dev/vda rw\n"
                "23 22 0:21 / /proc rw - proc proc rw\n")


def test_cgroup_v2_container_quota(tmp_path):
    # a container: its own group is the root of the mount, /proc/self/cgroup says "/"
    cg = tmp_path / "sys" / "fs" / "cgroup"
    _write(cg, cpu__max="200000 100000\n")
    proc = _proc(tmp_path, OTHER_MOUNTS + _v2_line(cg), "0::/\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 2


def test_cgroup_v2_no_quota_and_missing_file(tmp_path):
    cg = tmp_path / "cg"
    _write(cg, cpu__max="max 100000\n")
    assert _cpu_limits.read_cgroup_cpu_limit(_proc(tmp_path, _v2_line(cg), "0::/\n")) is None
    os.remove(cg / "cpu.max")
    assert _cpu_limits.read_cgroup_cpu_limit(str(tmp_path / "proc")) is None


def test_cgroup_v2_parents_cap_their_children(tmp_path):
    # a host process in /a/b: the quota of /a (4 CPUs) and of /a/b (1.5 -> 2) both apply
    cg = tmp_path / "cg"
    _write(cg / "a", cpu__max="400000 100000\n")
    _write(cg / "a" / "b", cpu__max="150000 100000\n")
    proc = _proc(tmp_path, _v2_line(cg), "0::/a/b\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 2
    (cg / "a" / "b" / "cpu.max").write_text("max 100000\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 4
    # a sibling group's quota does not count
    _write(cg / "a" / "c", cpu__max="100000 100000\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 4


def test_cgroup_v2_group_mounted_as_root(tmp_path):
    # no cgroup namespace: the container's group /docker/x is mounted as the root
    cg = tmp_path / "cg"
    _write(cg, cpu__max="300000 100000\n")
    proc = _proc(tmp_path, _v2_line(cg, root="/docker/x"), "0::/docker/x\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 3


def test_cgroup_v1_quota(tmp_path):
    cpu = tmp_path / "cgroup" / "cpu,cpuacct"
    _write(cpu / "docker" / "x", cpu__cfs_quota_us="100000\n", cpu__cfs_period_us="100000\n")
    _write(cpu, cpu__cfs_quota_us="-1\n", cpu__cfs_period_us="100000\n")
    mounts = OTHER_MOUNTS + _v1_line(cpu) + _v1_line(tmp_path / "memory", options="rw,memory")
    cgroup = "5:memory:/docker/x\n3:cpu,cpuacct:/docker/x\n1:name=systemd:/docker/x\n"
    assert _cpu_limits.read_cgroup_cpu_limit(_proc(tmp_path, mounts, cgroup)) == 1


def test_cgroup_v1_no_quota(tmp_path):
    cpu = tmp_path / "cpu"
    _write(cpu, cpu__cfs_quota_us="-1\n", cpu__cfs_period_us="100000\n")
    proc = _proc(tmp_path, _v1_line(cpu, options="rw,cpu"), "2:cpuacct:/\n1:cpu:/\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) is None


def test_hybrid_hierarchies_take_the_smaller_quota(tmp_path):
    cpu, unified = tmp_path / "cpu", tmp_path / "unified"
    _write(cpu, cpu__cfs_quota_us="600000\n", cpu__cfs_period_us="100000\n")
    _write(unified, cpu__max="250000 100000\n")
    proc = _proc(tmp_path, _v1_line(cpu, options="rw,cpu") + _v2_line(unified),
                 "1:cpu:/\n0::/\n")
    assert _cpu_limits.read_cgroup_cpu_limit(proc) == 3


def test_mount_points_with_escaped_spaces(tmp_path):
    cg = tmp_path / "my cgroup"
    _write(cg, cpu__max="100000 100000\n")
    line = _v2_line(str(cg).replace(" ", "\\040"))
    assert _cpu_limits.read_cgroup_cpu_limit(_proc(tmp_path, line, "0::/\n")) == 1


@pytest.mark.parametrize("mountinfo, cgroup, files", [
    ("garbage\n\n- - -\n1 2 3 - x\n", "0::/\n", {"cpu__max": "100000 100000"}),
    (None, "0::/\n", {"cpu__max": "100000 100000"}),           # no mountinfo
    ("v2", None, {"cpu__max": "100000 100000"}),                # no cgroup file
    ("v2", "garbage without colons\n", {"cpu__max": "100000 100000"}),
    ("v2", "0::/\n", {"cpu__max": "lots of CPUs"}),
    ("v2", "0::/\n", {"cpu__max": "\x00\xff"}),
    ("v1", "1:cpu:/\n", {"cpu__cfs_quota_us": "100000"}),       # no period file
    ("v1", "1:cpu:/\n", {"cpu__cfs_quota_us": "1e5", "cpu__cfs_period_us": "100000"}),
])
def test_malformed_or_absent_files_set_no_limit(tmp_path, mountinfo, cgroup, files):
    cg = tmp_path / "cg"
    _write(cg, **files)
    line = {"v2": _v2_line(cg), "v1": _v1_line(cg, options="rw,cpu")}.get(mountinfo,
                                                                          mountinfo)
    proc = tmp_path / "proc"
    proc.mkdir()
    if line is not None:
        (proc / "mountinfo").write_text(line)
    if cgroup is not None:
        (proc / "cgroup").write_text(cgroup)
    assert _cpu_limits.read_cgroup_cpu_limit(str(proc)) is None


def test_unreadable_proc_folder_sets_no_limit(tmp_path):
    assert _cpu_limits.read_cgroup_cpu_limit(str(tmp_path / "absent")) is None


@pytest.mark.parametrize("affinity, quota, count, expected", [
    (64, None, 64, 64),
    (64, 2, 64, 2),             # a 2-CPU container on a 64-core host
    (3, 8, 64, 3),              # taskset to 3 CPUs
    (None, 5, 64, 5),           # a platform without affinity
    (None, None, 12, 12),
    (None, None, None, 1),      # nothing known: one thread
    (8, None, None, 8),
])
def test_usable_cpus_is_the_smallest_limit(monkeypatch, affinity, quota, count, expected):
    monkeypatch.setattr(_cpu_limits, "affinity_cpus", lambda: affinity)
    monkeypatch.setattr(_cpu_limits, "cgroup_cpu_limit", lambda: quota)
    monkeypatch.setattr(_cpu_limits.os, "cpu_count", lambda: count)
    assert _cpu_limits.usable_cpus() == expected


def test_affinity_of_this_process():
    if not hasattr(os, "sched_getaffinity"):
        assert _cpu_limits.affinity_cpus() is None
    else:
        assert _cpu_limits.affinity_cpus() == len(os.sched_getaffinity(0))


class _ThreadsSeen(MSELoss):
    """MSE that records the thread counts training hands it (in the class: training may
    work on a copy of the instance)."""

    seen: list = []

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _ThreadsSeen.seen.append(n_threads)
        super().gradient_hessian(y, raw, gradient, hessian, n_threads)


def _threads_of_default_fit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    _ThreadsSeen.seen = []
    BoostRegressor(n_estimators=3, loss=_ThreadsSeen()).fit(X, X[:, 0])
    return _ThreadsSeen.seen


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP: always one thread")
def test_a_container_quota_caps_the_default_fit(monkeypatch):
    monkeypatch.setattr(_cpu_limits, "affinity_cpus", lambda: 64)
    monkeypatch.setattr(_cpu_limits.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(_cpu_limits, "cgroup_cpu_limit", lambda: 1)
    assert effective_n_threads(None) == 1
    assert effective_n_threads(-1) == 1
    assert effective_n_threads(16) == 1
    seen = _threads_of_default_fit()
    assert seen and set(seen) == {1}


_AFFINITY_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    from boostlib import BoostRegressor
    from boostlib.builtin.losses import MSELoss
    from boostlib._kernels._openmp import effective_n_threads

    # boostlib (and OpenMP) loaded with every CPU; now the process may use one
    before = effective_n_threads(None)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    class Seen(MSELoss):
        seen = []
        def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
            Seen.seen.append(n_threads)
            super().gradient_hessian(y, raw, gradient, hessian, n_threads)

    X = np.random.default_rng(0).normal(size=(500, 4))
    BoostRegressor(n_estimators=3, loss=Seen()).fit(X, X[:, 0])
    print(before, effective_n_threads(None), sorted(set(Seen.seen)))
""")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP: always one thread")
def test_an_affinity_mask_of_one_cpu_gives_one_thread():
    if _cpu_limits.usable_cpus() < 2:
        pytest.skip("this process may use one CPU only: nothing to restrict")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _AFFINITY_SCRIPT], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    before, after, seen = out.stdout.strip().split(" ", 2)
    assert int(before) >= 2          # OpenMP's own count stays at the CPUs it started with
    assert int(after) == 1
    assert seen == "[1]"


# -- CPUs busy with other processes ------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("0.23 0.39 0.64 2/345 12345\n", 2),
    ("1.00 1.00 1.00 17/2000 99", 17),
    ("0.1 0.2 0.3", None),
    ("0.1 0.2 0.3 x/10 5", None),
    ("0.1 0.2 0.3 10 5", None),
    ("", None),
    (None, None),
])
def test_running_tasks_from_loadavg(text, expected):
    assert _cpu_limits.parse_running(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("123 (python3) R 1 123 123 0 -1", True),
    ("123 (a) b) c) R 1 2", True),        # a name holding ") " and spaces
    ("123 (python3) S 1 123", False),
    ("123 (R) S 1", False),
    ("123 (python3)", False),
    ("", False),
    (None, False),
])
def test_running_thread_from_task_stat(text, expected):
    assert _cpu_limits.parse_task_running(text) == expected


def test_other_processes_count_and_this_one_does_not(monkeypatch):
    # 5 runnable on the machine, 2 of them this process's threads: 3 elsewhere
    monkeypatch.setattr(_cpu_limits, "_own_running", lambda: 2)
    monkeypatch.setattr(_cpu_limits, "_read", lambda path: "0.5 0.5 0.5 5/300 1")
    assert _cpu_limits.busy_elsewhere() == 3
    monkeypatch.setattr(_cpu_limits.os, "cpu_count", lambda: 4)
    assert _cpu_limits.idle_cpus() == 1
    monkeypatch.setattr(_cpu_limits.os, "cpu_count", lambda: 2)
    assert _cpu_limits.idle_cpus() == 1           # never fewer than one
    monkeypatch.setattr(_cpu_limits, "_read", lambda path: None)
    assert _cpu_limits.busy_elsewhere() == 0      # no /proc: nothing known to be busy


def test_a_process_busy_a_fraction_of_the_samples_rounds(monkeypatch):
    samples = iter(["0 0 0 2/9 1", "0 0 0 1/9 1", "0 0 0 1/9 1", "0 0 0 2/9 1", "0 0 0 1/9 1"])
    monkeypatch.setattr(_cpu_limits, "_own_running", lambda: 1)
    monkeypatch.setattr(_cpu_limits, "_read", lambda path: next(samples))
    assert _cpu_limits.busy_elsewhere() == 0      # busy in 2 of 5 samples: rounds to 0
    reads = []
    monkeypatch.setattr(_cpu_limits, "_read", lambda path: reads.append(path) or "0 0 0 1/9 1")
    assert _cpu_limits.busy_elsewhere() == 0 and len(reads) == 1   # alone: one read


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="needs Linux's /proc")
def test_a_busy_process_is_seen():
    busy = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\nwhile True: pass"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "ready"
        assert _cpu_limits.busy_elsewhere() >= 1
    finally:
        busy.kill()
        busy.wait()


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP: always one thread")
def test_a_default_fit_leaves_the_busy_cpus_out(monkeypatch):
    monkeypatch.setattr(_cpu_limits, "affinity_cpus", lambda: 4)
    monkeypatch.setattr(_cpu_limits, "cgroup_cpu_limit", lambda: None)
    monkeypatch.setattr(_cpu_limits.os, "cpu_count", lambda: 4)
    if effective_n_threads(None) < 2:
        pytest.skip("OMP_NUM_THREADS or the OpenMP runtime allows one thread")
    monkeypatch.setattr(_openmp, "idle_cpus", lambda: 1)
    assert training_n_threads(None) == 1
    assert training_n_threads(2) == 2             # a count asked for is kept
    assert training_n_threads(-1) == effective_n_threads(-1)
    seen = _threads_of_default_fit()
    assert seen and set(seen) == {1}
    monkeypatch.setattr(_openmp, "idle_cpus", lambda: 4)
    assert training_n_threads(None) == effective_n_threads(None)


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP: always one thread")
@pytest.mark.parametrize("params", [
    dict(grow_policy="depthwise"),                  # the compiled loop (its settings remade)
    dict(grow_policy="symmetric"),
    dict(grow_policy="lossguide", max_leaves=15),
    dict(grow_policy="depthwise", subsample=0.6, random_state=3),
    dict(grow_policy="depthwise", sampler="goss", random_state=3),
    dict(grow_policy="symmetric", sampler="mvs", subsample=0.5, random_state=3),
    dict(grow_policy="symmetric", loss="mse", linear_leaves=True),
])
def test_a_thread_count_changed_during_the_fit_keeps_the_model(monkeypatch, params):
    """A default fit checks the machine's load between iterations and may change its thread
    count: the model is the one fitted on a fixed count."""
    from boostlib.booster import training
    from boostlib.engine import loop

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1])) + rng.normal(0, 0.1, 3000)
    fixed = BoostRegressor(n_estimators=12, n_jobs=1, **params).fit(X, y)

    counts = iter([2, 1, 2, 1] * 10)
    monkeypatch.setattr(loop, "THREAD_CHECK_S", 0.0)
    monkeypatch.setattr(training, "training_n_threads", lambda n_jobs: next(counts))
    _ThreadsSeen.seen = []
    if params.get("loss") is None:
        params = dict(params, loss=_ThreadsSeen())
    moving = BoostRegressor(n_estimators=12, **params).fit(X, y)
    assert np.array_equal(moving.predict(X), fixed.predict(X))
    if _ThreadsSeen.seen:
        assert set(_ThreadsSeen.seen) == {1, 2}       # the loss saw both counts


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP: always one thread")
@pytest.mark.parametrize("sampler", ["uniform", "goss", "mvs"])
def test_a_sampler_follows_the_thread_count_of_the_fit(monkeypatch, sampler):
    """The built-in samplers draw with the count the fit runs on now, not the first one."""
    from boostlib.booster import training
    from boostlib.builtin import samplers
    from boostlib.engine import loop

    seen = []
    original = samplers._CompiledSampler._n_threads.fget
    monkeypatch.setattr(samplers._CompiledSampler, "_n_threads",
                        property(lambda self: seen.append(original(self)) or seen[-1]))
    counts = iter([2, 1, 2, 1] * 10)
    monkeypatch.setattr(loop, "THREAD_CHECK_S", 0.0)
    monkeypatch.setattr(training, "training_n_threads", lambda n_jobs: next(counts))
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 4))
    y = X[:, 0] + rng.normal(0, 0.1, 2000)
    # (GOSS samples from iteration 1 / learning_rate on)
    BoostRegressor(n_estimators=16, sampler=sampler, subsample=0.5, random_state=0).fit(X, y)
    assert set(seen) == {1, 2}
