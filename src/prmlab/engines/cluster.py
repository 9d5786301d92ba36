"""Where a generation stage's shards run: in this process (`local`) or on a Ray cluster (`ray`).

Inputs: a stage's items (problems or responses) cut into shards of `shard_size`, its `ShardWriter` (the
unit of resume), a `work(gen, i, chunk) -> (records, meta)` over a `prmlab.engines.generation.Generator`, and the
model's `BackendConfig`. Outputs: every shard's records in input order; each finished shard is written
atomically by this process, the only writer, whichever replica computed it.

- `local`: one generator in this process (made on first use), shards one after another: the one-process
  run every other engine must equal byte for byte.
- `ray`: `replicas` Ray actors, each holding one engine (vLLM or transformers) warm across shards, with
  `cpus_per_replica` CPUs and `gpus_per_rank * tensor_parallel_size` GPUs. A replica takes one shard at a
  time, so a replica (or its node) that dies loses one shard: it is queued again for another replica, a
  replacement replica is started, and the stage's summary counts the retries. Outputs equal the local run's,
  since a shard's draws depend only on its seed (`seed + shard index`) and its items, never on which
  process or how many ran it (tests/engines/test_engine.py checks this on a two-node cluster).

The connection and the cluster's resources are checked in a stage's `prepare` (`check_engine`), before any
model loads: an unreachable address or a replica no node can hold is one line naming the params key.
Which engine a stage uses is the `engine` section of params.yaml; it is not a DVC param, because outputs do
not depend on it, so switching engines reruns nothing.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from prmlab.core.credentials import child_env
from prmlab.core.params import ParamsError, check
from prmlab.core.runtime import Closing
from prmlab.core.tracking import Progress
from prmlab.engines.config import BackendConfig
from prmlab.engines.generation import GenerationError, make_generator

Kind = Literal["local", "ray"]


@dataclass(frozen=True)
class RayConfig:
    address: str = "auto"  # auto: the cluster `ray start` made on this machine; host:port or ray://host:10001;
    #                        local: a private one-machine Ray started by the stage itself
    replicas: int = 0  # engines (actors) across the cluster; 0: as many as its nodes hold
    cpus_per_replica: float = 1.0  # Ray CPUs each replica reserves
    gpus_per_rank: float = 0.0  # GPUs per tensor-parallel rank: a replica reserves this x the model's tensor_parallel_size
    threads: int = 1  # torch / OpenMP threads inside a CPU replica
    max_retries: int = 3  # shards a stage may rerun after replicas died, in all; one more failure ends the stage
    connect_timeout_s: float = 15.0  # for the address check and for replicas to start (model loading not included)

    def __post_init__(self):
        check(self.replicas >= 0, "replicas must be >= 0 (0: as many as the cluster holds)")
        check(self.cpus_per_replica > 0, "cpus_per_replica must be > 0")
        check(self.gpus_per_rank >= 0, "gpus_per_rank must be >= 0")
        check(self.threads >= 1, "threads must be >= 1")
        check(self.max_retries >= 0, "max_retries must be >= 0")
        check(self.connect_timeout_s > 0, "connect_timeout_s must be > 0")


@dataclass(frozen=True)
class EngineConfig:
    """`engine` in params.yaml: per generation stage, local or ray (optional: absent means all local)."""

    sample: Kind = "local"
    sample_eval: Kind = "local"
    label_mc: Kind = "local"
    label_judge: Kind = "local"
    toy_human: Kind = "local"  # toy only: the writer's samples
    ceiling: Kind = "local"  # toy only: the ceiling PRM's samples
    ray: RayConfig = field(default_factory=RayConfig)

    OPTIONAL = True  # prmlab.core.params.load_params: a params file without this section gets these defaults

    def kind(self, stage: str) -> Kind:
        return getattr(self, stage)


def check_engine(cfg: EngineConfig, stage: str, backend: BackendConfig) -> None:
    """Before any model loads: a Ray stage's backend must be one Ray can replicate, its cluster must answer,
    and one of its nodes must hold a replica. Connects this process to the cluster (kept for the stage)."""
    if cfg.kind(stage) != "ray":
        return
    check(backend.backend != "openai", f"engine.{stage}: ray runs local engines (vllm, transformers); an openai "
                                       "backend is a server already: raise its max_concurrency instead")
    check(backend.data_parallel_size == 1, f"engine.{stage}: with ray, replicas replace vLLM's data parallelism: "
                                           "set data_parallel_size 1 and engine.ray.replicas instead")
    connect(cfg.ray)
    replicas_fitting(cfg.ray, backend)


# A client's HTTP/2 connection preface and an empty SETTINGS frame: a gRPC server (Ray's GCS, its client server)
# answers with a SETTINGS frame of its own at once (RFC 9113, 3.4); a web server, or a port that accepts and says
# nothing, does not.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _probe(address: str, timeout: float) -> None:
    """host:port must accept a TCP connection and answer as a gRPC server does, within `timeout`, else one line
    naming the key: ray.init would retry an unreachable address for minutes, and wait forever on a port that
    accepts and is not Ray. A TLS cluster (RAY_USE_TLS) is checked up to the connection."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ParamsError(f"engine.ray.address {address!r}: expected auto, local, host:port or ray://host:port")
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError | socket.timeout) else (e.strerror or type(e).__name__)
        raise ParamsError(f"engine.ray.address {address!r}: no Ray cluster answers there ({why} within "
                          f"{timeout:g}s); start one (ray start --head) or fix the address") from None
    with sock:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return
        head = b""
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.05))
            sock.sendall(H2_PREFACE)
            while len(head) < 9 and (chunk := sock.recv(9 - len(head))):
                head += chunk
            if len(head) == 9 and head[3] != 4:  # not gRPC: the rest of its first line, for the message
                sock.settimeout(0.2)
                head += sock.recv(31)
        except OSError:
            pass  # silent (timed out) or reset: said below by what came back
    if len(head) < 9 or head[3] != 4:
        said = (f"it answered {head.decode('ascii', 'replace').splitlines()[0][:40]!r}" if head else
                f"no answer within {timeout:g}s")
        raise ParamsError(f"engine.ray.address {address!r}: accepts connections but is no Ray cluster (a Ray node answers "
                          f"gRPC at once; {said}); fix the address or the port")


def connect(rc: RayConfig) -> None:
    import logging

    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no telemetry
    from ray.exceptions import AuthenticationError

    kw = dict(logging_level=logging.WARNING, log_to_driver=False, configure_logging=True)
    if rc.address == "local":  # always a new private instance, never a cluster `ray start` left running
        ray.init(address="local", include_dashboard=False, **kw)
        return
    if rc.address != "auto":
        _probe(rc.address, rc.connect_timeout_s)
    try:
        ray.init(address=rc.address, **kw)
    except (ConnectionError, AuthenticationError) as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        hint = ("; token authentication (Ray >= 2.60): the same RAY_AUTH_MODE on every node and this process, and "
                "the cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN" if isinstance(e, AuthenticationError) else "")
        raise ParamsError(f"engine.ray.address {rc.address!r}: {first}{hint}") from None


def _need(rc: RayConfig, backend: BackendConfig) -> dict[str, float]:
    need = {"CPU": rc.cpus_per_replica}
    if rc.gpus_per_rank:
        need["GPU"] = rc.gpus_per_rank * backend.tensor_parallel_size
    return need


def replicas_fitting(rc: RayConfig, backend: BackendConfig) -> int:
    """Replicas the cluster's live nodes hold (a replica on one node), or a one-line error if none or fewer than
    `replicas` fit (Ray would leave such actors pending forever)."""
    import ray

    need = _need(rc, backend)
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    fits = sum(int(min(res.get(k, 0.0) / v for k, v in need.items()) + 1e-9) for res in nodes)
    have = ", ".join(f"{k} {sum(r.get(k, 0.0) for r in nodes):g}" for k in ("CPU", "GPU"))
    if fits == 0:
        raise ParamsError(f"engine.ray: no node of the Ray cluster can hold a replica needing "
                          f"{', '.join(f'{k} {v:g}' for k, v in need.items())} (engine.ray.cpus_per_replica, gpus_per_rank "
                          f"x tensor_parallel_size); its {len(nodes)} node(s) have {have} in all")
    if rc.replicas > fits:
        raise ParamsError(f"engine.ray.replicas {rc.replicas}: the cluster's nodes hold {fits} replica(s) of "
                          f"{need} ({have} in all)")
    return rc.replicas or fits


class _Replica:
    """One engine in a Ray actor, kept warm across shards (the class is made remote in RayPool)."""

    def __init__(self, backend: BackendConfig, threads: int, cwd: str):
        if os.path.isdir(cwd):  # relative paths mean what they mean to the stage (a shared file system)
            os.chdir(cwd)
        try:
            import torch

            torch.set_num_threads(threads)
        except ImportError:
            pass
        self.gen = make_generator(backend)

    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def run(self, work, i: int, chunk: list):
        return work(self.gen, i, chunk)

    def call(self, fn):
        return fn(self.gen)


class RayPool:
    """`replicas` warm engines on the cluster `connect` joined; `map` runs shards on them with retries."""

    def __init__(self, rc: RayConfig, backend: BackendConfig, desc: str):
        import ray

        self.rc, self.desc, self.retries = rc, desc, 0
        if os.path.isdir(backend.model):  # the same folder on every node (a shared file system)
            backend = dataclasses.replace(backend, model=os.path.abspath(backend.model))
        replicas = replicas_fitting(rc, backend)
        need = _need(rc, backend)
        # The engines' own settings, never a secret: Ray writes a runtime_env in clear into its session logs and GCS
        env, held = child_env({k: v for k, v in os.environ.items() if k.startswith(("VLLM_", "HF_", "TRANSFORMERS_"))},
                              urls=True)
        if held:
            print(f"[{desc}] not sent to the replicas: {', '.join(held)} (named like a secret, or a URL carrying one: "
                  "Ray records a replica's environment in clear; a node reads its own, e.g. ~/.cache/huggingface/token)",
                  file=sys.stderr, flush=True)
        if "GPU" not in need:  # CPU replicas share a machine's cores: no vLLM core pinning, `threads` each
            env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
            env["OMP_NUM_THREADS"] = str(rc.threads)
        self.actor_cls = ray.remote(_Replica).options(
            num_cpus=need["CPU"], num_gpus=need.get("GPU", 0), max_restarts=0, max_task_retries=0,
            runtime_env={"env_vars": env})
        self.args = (backend, rc.threads, os.getcwd())
        self.booting: dict = {}  # ready ref -> actor
        self.idle: list = []
        for _ in range(replicas):
            self._start()

    def _start(self) -> None:
        actor = self.actor_cls.remote(*self.args)
        self.booting[actor.where.remote()] = actor

    def _died(self, what: str, err: Exception) -> None:
        """A replica died (killed, out of memory, its node lost): count it against max_retries, start another."""
        self.retries += 1
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        print(f"[{self.desc}] a replica died during {what} ({first}); retry {self.retries} of {self.rc.max_retries} "
              "on another replica", file=sys.stderr, flush=True)
        if self.retries > self.rc.max_retries:
            raise GenerationError(f"{self.desc}: replicas died {self.retries} times (engine.ray.max_retries "
                                  f"{self.rc.max_retries}); last: {first}")
        self._start()

    def _ready(self, ref) -> None:
        """A booting replica answered: it joins the idle pool, or its start failed (a bad model is a bug of the
        check, not a fault to retry: re-raised) or it died (retried)."""
        import ray
        from ray.exceptions import ActorDiedError, RayActorError

        actor = self.booting.pop(ref)
        try:
            pid, node = ray.get(ref)
        except ActorDiedError as e:
            if e.actor_init_failed:
                raise GenerationError(f"{self.desc}: a replica could not load its engine: "
                                      f"{str(e).strip().splitlines()[-1][:300]}") from None
            self._died("its start", e)
            return
        except RayActorError as e:
            self._died("its start", e)
            return
        print(f"[{self.desc}] replica ready: pid {pid} on node {node[:12]}", file=sys.stderr, flush=True)
        self.idle.append(actor)

    def map(self, work, jobs: list[tuple[int, list]]):
        """Yield (i, work's result) for every (i, chunk) of `jobs`, in the order they finish."""
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        work_ref = ray.put(work)  # sent once, not with every shard
        queue, busy = deque(jobs), {}
        wait_s = max(self.rc.connect_timeout_s, 600.0)  # for a replica to start while no shard runs
        deadline = time.monotonic() + wait_s
        while queue or busy:
            while self.idle and queue:
                actor, (i, chunk) = self.idle.pop(), queue.popleft()
                busy[actor.run.remote(work_ref, i, chunk)] = (actor, i, chunk)
            if not busy and not self.booting:
                raise GenerationError(f"{self.desc}: no replica left to run {len(queue)} shard(s)")
            done, _ = ray.wait([*busy, *self.booting], num_returns=1, timeout=5.0)
            if not done:
                if not busy and time.monotonic() > deadline:  # replicas pending: the cluster lost capacity
                    raise GenerationError(f"{self.desc}: no replica started within {wait_s:.0f}s; "
                                          "the cluster may have lost the nodes that held them")
                continue
            ref = done[0]
            if ref in self.booting:
                self._ready(ref)
                deadline = time.monotonic() + wait_s
                continue
            actor, i, chunk = busy.pop(ref)
            try:
                result = ray.get(ref)
            except (RayActorError, WorkerCrashedError) as e:
                ray.kill(actor)
                queue.appendleft((i, chunk))
                self._died(f"shard {i}", e)
                continue
            # An exception the work raised (bad data, a generation error) is not a fault to retry: ray.get
            # raised it as its own type (RayTaskError subclasses it), so the stage's one-line errors still apply.
            self.idle.append(actor)
            yield i, result

    def wait_ready(self) -> None:
        """Until every replica has loaded its engine (a benchmark times shards, not starts)."""
        import ray

        while self.booting:
            done, _ = ray.wait(list(self.booting), num_returns=1)
            self._ready(done[0])

    def call(self, fn):
        """fn(gen) on one replica (e.g. label_mc's comparison with exhaustive MC after the shards)."""
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        while True:
            while not self.idle:
                if not self.booting:
                    raise GenerationError(f"{self.desc}: no replica left")
                done, _ = ray.wait(list(self.booting), num_returns=1)
                self._ready(done[0])
            actor = self.idle[0]
            try:
                return ray.get(actor.call.remote(fn))
            except (RayActorError, WorkerCrashedError) as e:  # a dead replica: another one, as for a shard
                self.idle.remove(actor)
                ray.kill(actor)
                self._died("a call", e)

    def close(self) -> None:
        import ray

        for actor in [*self.idle, *self.booting.values()]:
            ray.kill(actor)
        self.idle, self.booting = [], {}


class Engine(Closing):
    """A stage's engine: `shards(...)` runs its shards, `call(fn)` runs fn(gen) once; `local` makes its
    generator on first use (a stage whose shards all resumed loads no model), or uses `gen` if given."""

    def __init__(self, backend: BackendConfig, kind: Kind = "local", ray: RayConfig | None = None, desc: str = "",
                 gen=None):
        self.backend, self.kind, self.rc, self.desc = backend, kind, ray or RayConfig(), desc
        self._gen, self._own = gen, gen is None
        self.pool: RayPool | None = None
        self._retries = 0  # kept past close(): the stage's summary reads it after its `with`

    @property
    def gen(self):
        if self._gen is None:
            self._gen = make_generator(self.backend)
        return self._gen

    def _pool(self) -> RayPool:
        if self.pool is None:
            connect(self.rc)
            self.pool = RayPool(self.rc, self.backend, self.desc)
        return self.pool

    @property
    def retries(self) -> int:
        """Shards rerun because a replica died (ray only)."""
        return self.pool.retries if self.pool else self._retries

    def shards(self, items: list, shard_size: int, writer, work, unit: str = "items", cls=None) -> tuple[list, dict]:
        """Run `work(gen, i, chunk) -> (records, meta)` over the shards `writer` (a prmlab.core.io.ShardWriter, or
        None: nothing to resume) has not finished; meta (a dict or None) is written beside shard i before it.

        Returns every record in input order and the metas of the shards run now ({i: meta}: this run's counts)."""
        shards = [items[i: i + shard_size] for i in range(0, len(items), shard_size)]
        prog = Progress(len(items), self.desc, unit=unit)
        out: dict[int, list] = {}
        for i, chunk in enumerate(shards):
            if writer is not None and writer.done(i):
                out[i] = writer.read(i, cls)
                prog.update(len(chunk))
        if out:
            print(f"[{self.desc}] resumed: {len(out)}/{len(shards)} shards were already done", file=sys.stderr)
        jobs = [(i, chunk) for i, chunk in enumerate(shards) if i not in out]
        metas: dict[int, Any] = {}
        if jobs:
            results = self._pool().map(work, jobs) if self.kind == "ray" else ((i, work(self.gen, i, c)) for i, c in jobs)
            for i, (recs, meta) in results:
                if writer is not None:
                    if meta is not None:
                        writer.write_meta(i, meta)  # before the shard: a shard on disk always has its meta
                    writer.write(i, recs)
                out[i], metas[i] = recs, meta
                prog.update(len(shards[i]))
        return [r for i in range(len(shards)) for r in out[i]], metas

    def call(self, fn):
        return self._pool().call(fn) if self.kind == "ray" else fn(self.gen)

    def start(self) -> None:
        """Load the engine(s) now: the local generator, or every replica."""
        if self.kind == "ray":
            self._pool().wait_ready()
        else:
            _ = self.gen

    def close(self) -> None:
        if self.pool is not None:
            import ray

            self._retries = self.pool.retries
            self.pool.close()
            ray.shutdown()  # disconnects; a private `address: local` instance stops with it
        if self._own and self._gen is not None:
            self._gen.close()
        self._gen = self.pool = None


def open_engine(cfg: dict, stage: str, backend: BackendConfig, desc: str | None = None) -> Engine:
    """The engine params.yaml's `engine` section names for `stage` (cfg: the stage's loaded sections)."""
    ec = cfg.get("engine") or EngineConfig()
    return Engine(backend, ec.kind(stage), ec.ray, desc or stage)
