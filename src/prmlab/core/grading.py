"""Answer equivalence with math-verify, with a timeout that works on any thread.

math-verify guards sympy with SIGALRM timeouts, which only work on the main thread. On the main
thread we use them; elsewhere (Prefect task threads, a server) grading runs in a one-process worker
pool and a hung comparison is cut off by `future.result(timeout)` and the worker replaced.
Gold goes first, as math-verify requires: `verify(gold, pred)`.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import re
import threading

from prmlab.core.records import Response
from prmlab.core.steps import extract_answer, split_steps
from prmlab.toy.world import verify

_pool: cf.ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def normalize_answer(ans: str) -> str:
    s = ans.strip().strip("$").strip()
    s = re.sub(r"\\(?:text|mathrm|textbf)\{([^{}]*)\}", r"\1", s)
    s = s.replace("\\!", "").replace("\\,", "").replace("\\ ", "").replace(" ", "")
    s = s.rstrip(".").replace("dfrac", "frac").replace("tfrac", "frac")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    return s


def _verify(gold: str, pred: str, timeout: int | None) -> bool:
    from math_verify import parse, verify

    g = parse(f"\\boxed{{{gold}}}", parsing_timeout=timeout)
    p = parse(f"\\boxed{{{pred}}}", parsing_timeout=timeout)
    if not g or not p:
        return False
    return bool(verify(g, p, timeout_seconds=timeout))


def _verify_in_worker(gold: str, pred: str) -> bool:
    # A worker process runs this on its main thread, so signal timeouts work there too; the
    # parent's future timeout is the backstop.
    return _verify(gold, pred, 5)


def _worker_pool() -> cf.ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
        return _pool


def _reset_pool() -> None:
    global _pool
    with _pool_lock:
        if _pool is not None:
            for p in list(getattr(_pool, "_processes", {}).values()):
                p.kill()
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None


def is_equivalent(gold: str | None, pred: str | None, timeout: float = 5.0) -> bool:
    """True if `pred` is mathematically equal to `gold`. None on either side is never equal."""
    if gold is None or pred is None or not str(pred).strip():
        return False
    gold, pred = str(gold), str(pred)
    if normalize_answer(gold) == normalize_answer(pred):
        return True
    if threading.current_thread() is threading.main_thread():
        try:
            return _verify(gold, pred, max(1, int(timeout)))
        except Exception:
            return False
    fut = _worker_pool().submit(_verify_in_worker, gold, pred)
    try:
        return bool(fut.result(timeout=timeout + 30))  # + worker start-up on first use
    except cf.TimeoutError:
        _reset_pool()
        return False
    except Exception:
        return False


def to_response(problem, rid: str, text: str, num_tokens: int, keep_unanswered: bool = False):
    """A policy completion -> (graded Response, None), or (None, reason) for one that must be dropped
    (no steps; no answer unless `keep_unanswered`, then it is kept as wrong). Where the problem carries
    a toy solution graph, the exact verifier also records the true first wrong step."""
    steps = split_steps(text)
    if not steps:
        return None, "no_steps"
    answer = extract_answer(text)
    if answer is None and not keep_unanswered:
        return None, "no_answer"
    fe = kind = None
    if "nodes" in problem.meta:  # toy world: exact labels

        v = verify(problem, steps)
        fe, kind = v.first_error, v.kind
    return Response(problem_id=problem.id, response_id=rid, steps=steps, answer=answer,
                    correct=answer is not None and is_equivalent(problem.gold_answer, answer), true_first_error=fe, error_kind=kind,
                    num_tokens=num_tokens), None
