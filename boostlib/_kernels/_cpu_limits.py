"""How many CPUs this process may use: what the default thread count is made of.

``os.cpu_count()`` counts the machine's CPUs. A process may use fewer: its CPU affinity mask
(``taskset``, ``docker --cpuset-cpus``, a batch scheduler) lists the CPUs it may run on, and
a Linux control group may cap its CPU *time* (``docker --cpus=2``, a Kubernetes CPU limit,
``systemd``'s ``CPUQuota=``): a quota of ``q`` microseconds per period of ``p`` is worth
``ceil(q / p)`` CPUs. Threads beyond that only wait for each other (a 2-CPU container on a
64-core host that starts 64 threads is throttled, not faster).

:func:`usable_cpus` is the smallest of the three. The control group is found as the kernel
describes it: ``/proc/self/cgroup`` names the process's group, ``/proc/self/mountinfo``
where each hierarchy is mounted (inside a container, the container's own group is usually
the root of the mount), and every level from the process's group up to the mount's root
counts (a parent's quota caps its children). Both versions are read:

* cgroup v2, file ``cpu.max``: ``"max 100000"`` (no quota) or ``"200000 100000"`` (quota and
  period, microseconds);
* cgroup v1, the ``cpu`` controller's ``cpu.cfs_quota_us`` (``-1``: no quota) and
  ``cpu.cfs_period_us``.

A file that is absent, unreadable or malformed sets no limit (it is skipped, never an
error: training must not fail over a file of the operating system). Outside Linux only the
affinity (where the platform has it) and ``os.cpu_count()`` count.

:func:`idle_cpus` counts the machine's CPUs that other processes' threads do not keep busy
right now (``/proc/loadavg``'s runnable tasks minus this process's): a fit at the default
``n_jobs`` runs on no more threads than that (``_openmp.training_n_threads``, asked when
the fit starts and every second after).

The control groups are read once per process (:func:`cgroup_cpu_limit` caches them);
the affinity mask is read on every call (one system call; it may change at run time).
"""
from __future__ import annotations

import functools
import math
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

#: Where the kernel describes the calling process.
PROC_SELF = "/proc/self"


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except (OSError, ValueError):
        return None


def quota_cpus(quota: int, period: int) -> Optional[int]:
    """CPUs a quota of ``quota`` microseconds per ``period`` is worth: ``ceil(quota /
    period)``, at least 1; None (no limit) when either is not positive."""
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def parse_cpu_max(text: Optional[str]) -> Optional[int]:
    """CPUs allowed by the text of a cgroup v2 ``cpu.max`` file: ``"max [period]"`` (None:
    no limit) or ``"quota [period]"`` (the period defaults to 100000, the kernel's).
    Malformed text: None."""
    if text is None:
        return None
    fields = text.split()
    if not 1 <= len(fields) <= 2 or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) == 2 else 100_000
    except ValueError:
        return None
    return quota_cpus(quota, period)


def parse_cfs(quota_text: Optional[str], period_text: Optional[str]) -> Optional[int]:
    """CPUs allowed by cgroup v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` (quota
    ``-1``: no limit). Malformed or absent text: None."""
    if quota_text is None or period_text is None:
        return None
    try:
        quota, period = int(quota_text.strip()), int(period_text.strip())
    except ValueError:
        return None
    return quota_cpus(quota, period)


def _unescape(field: str) -> str:
    """A path of ``/proc/self/mountinfo``, whose spaces and the like are octal escapes
    (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts(mountinfo: str) -> Iterator[Tuple[str, str, str, List[str]]]:
    """``(root, mount point, filesystem type, super options)`` of every line of
    ``/proc/self/mountinfo`` (malformed lines skipped)."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if dash < 5 or len(fields) < dash + 3:
            continue
        yield (_unescape(fields[3]), _unescape(fields[4]), fields[dash + 1],
               fields[dash + 3].split(","))


def _groups(cgroup: str) -> Dict[str, str]:
    """The process's group per hierarchy, from ``/proc/self/cgroup``: ``"v2"`` for the
    unified hierarchy (``0::/path``), ``"cpu"`` for the v1 hierarchy holding the ``cpu``
    controller."""
    out: Dict[str, str] = {}
    for line in cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            out["v2"] = path
        elif "cpu" in controllers.split(","):
            out["cpu"] = path
    return out


def _levels(mount_point: str, mount_root: str, group: str) -> List[str]:
    """The directories of ``group`` and of its parents up to the mount point, for a
    hierarchy whose ``mount_root`` is mounted at ``mount_point``. A group outside the
    mounted root (a container that sees its own group mounted as the root) has the mount
    point alone."""
    root = mount_root.rstrip("/")
    if group == root or group.startswith(root + "/"):
        relative = group[len(root):].strip("/")
    else:
        relative = ""
    parts = relative.split("/") if relative else []
    return [os.path.join(mount_point, *parts[:k]) for k in range(len(parts), -1, -1)]


def read_cgroup_cpu_limit(proc: str = PROC_SELF) -> Optional[int]:
    """The CPUs the process's control groups allow (the smallest quota along its group and
    their parents, cgroup v2 and v1), or None when no quota applies or none can be read.

    Parameters
    ----------
    proc : str, default "/proc/self"
        The directory holding the process's ``cgroup`` and ``mountinfo`` files (tests
        point it to files of their own; the mount points those name are read as they are).
    """
    mountinfo = _read(os.path.join(proc, "mountinfo"))
    cgroup = _read(os.path.join(proc, "cgroup"))
    if mountinfo is None or cgroup is None:
        return None
    groups = _groups(cgroup)
    limits: List[int] = []
    for root, point, fstype, options in _mounts(mountinfo):
        if fstype == "cgroup2" and "v2" in groups:
            for level in _levels(point, root, groups["v2"]):
                limit = parse_cpu_max(_read(os.path.join(level, "cpu.max")))
                if limit is not None:
                    limits.append(limit)
        elif fstype == "cgroup" and "cpu" in options and "cpu" in groups:
            for level in _levels(point, root, groups["cpu"]):
                limit = parse_cfs(_read(os.path.join(level, "cpu.cfs_quota_us")),
                                  _read(os.path.join(level, "cpu.cfs_period_us")))
                if limit is not None:
                    limits.append(limit)
    return min(limits) if limits else None


@functools.lru_cache(maxsize=1)
def cgroup_cpu_limit() -> Optional[int]:
    """:func:`read_cgroup_cpu_limit` of this process, read once and kept."""
    return read_cgroup_cpu_limit()


def affinity_cpus() -> Optional[int]:
    """The CPUs in this process's affinity mask (None where the platform does not say)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None:
        return None
    try:
        return len(getaffinity(0)) or None
    except OSError:
        return None


def usable_cpus() -> int:
    """The CPUs this process may use: the smallest of its affinity mask, its control
    groups' CPU quota and ``os.cpu_count()``; at least 1."""
    counts = [n for n in (affinity_cpus(), cgroup_cpu_limit(), os.cpu_count()) if n]
    return max(1, min(counts)) if counts else 1


# ---------------------------------------------------------------------------------------
# CPUs busy with other work. A 2-thread fit on 2 cores beside one busy process gets about
# one core, but OpenMP threads that wait for each other spin (GCC's libgomp: 300,000 times
# before sleeping) and a descheduled thread holds its team up for a scheduler time slice:
# such a fit runs 4-9x slower than quiet, where one thread runs it about 2x slower.

#: Samples of the run queue taken by :func:`busy_elsewhere`, and the pause between them.
BUSY_SAMPLES = 5
BUSY_PAUSE_S = 1e-4


def parse_running(text: Optional[str]) -> Optional[int]:
    """The tasks running or runnable now, from the text of ``/proc/loadavg`` (its fourth
    field, ``running/total``); None when absent or malformed."""
    fields = (text or "").split()
    if len(fields) < 4 or "/" not in fields[3]:
        return None
    running = fields[3].split("/")[0]
    return int(running) if running.isdigit() else None


def parse_task_running(text: Optional[str]) -> bool:
    """Whether the text of a ``/proc/<pid>/task/<tid>/stat`` file says the thread is
    running or runnable (state ``R``, the field after the parenthesised name)."""
    if not text or ")" not in text:
        return False
    rest = text[text.rindex(")") + 1:].split()
    return bool(rest) and rest[0] == "R"


def _own_running() -> int:
    """This process's threads running or runnable now (the caller's included)."""
    try:
        tasks = os.listdir(os.path.join(PROC_SELF, "task"))
    except OSError:
        return 1
    return max(1, sum(parse_task_running(_read(os.path.join(PROC_SELF, "task", t, "stat")))
                      for t in tasks))


def busy_elsewhere() -> int:
    """Threads of other processes running or runnable on this machine now: the kernel's
    count of runnable tasks (``/proc/loadavg``) minus this process's, the mean of
    :data:`BUSY_SAMPLES` samples rounded to the nearest integer (a process busy a third of
    the time counts as idle). 0 where ``/proc`` does not say (outside Linux), and at once
    when the first sample finds the caller alone running (a quiet machine: one read)."""
    import time

    counts = []
    for i in range(BUSY_SAMPLES):
        if i:
            time.sleep(BUSY_PAUSE_S)
        running = parse_running(_read("/proc/loadavg"))
        if running is None or (i == 0 and running <= 1):
            return 0
        counts.append(max(0, running - _own_running()))
    return int(sum(counts) / len(counts) + 0.5)


def idle_cpus() -> int:
    """The machine's CPUs not busy with other processes' threads now
    (``os.cpu_count() - busy_elsewhere()``), at least 1. An approximation in an affinity
    mask or a control group: the busy threads may run on CPUs this process may not use."""
    return max(1, (os.cpu_count() or 1) - busy_elsewhere())
