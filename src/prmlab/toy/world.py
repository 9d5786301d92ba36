"""A synthetic world of multi-step arithmetic word problems whose every step can be checked exactly.

    rng = random.Random(0)
    p = make_problem(rng, "toy-0")            # Problem with meta["quantities"], meta["nodes"]
    text = canonical_solution(p)              # "3 * 4 = 12\n\n7 + 12 = 19, so the answer is \\boxed{19}."
    verify(p, text)                           # Verdict(first_error=-1, kind=None)
    flawed = make_flawed(rng, p, "slip")      # (text, first_error_index)

Each problem is a short story (a person, an item, 2-5 events). Its solution graph is a list of
nodes `{"op", "args": [[kind, i], [kind, j]], "value"}` over given quantities ("q", i) and earlier
nodes ("n", j). Solutions are written like Qwen2.5-Math responses: steps separated by "\n\n", one
computation `a op b = c` a step, the last ending with `\boxed{answer}`, so the same splitting,
answer-extraction and grading code serves toy and real data.

`ToyWorldConfig` (params `toy`) draws the study's problems: `world_problems` its three splits, which
`draw_problems` writes as stage problems@toy (prmlab.core.stage runs it).

The verifier is the toy world's human annotator (ProcessBench / PRM800K): it returns the earliest
wrong step and why: `slip` (a op b != c), `operand` (an operand that is neither given nor derived
so far, or a computation that is not part of the solution), `unparseable` (no computation and no
answer), `answer` (wrong or missing final answer, or an answer the steps have not derived).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from prmlab.core.params import check
from prmlab.core.records import Problem
from prmlab.core.result import Done
from prmlab.core.steps import last_boxed, split_steps

NAMES = ["Ava", "Ben", "Cal", "Dee", "Eli", "Fay", "Gus", "Ivy", "Jon", "Kim", "Lea", "Max"]
ITEMS = ["apples", "pens", "coins", "cards", "books", "shells", "stamps", "beads", "eggs", "rocks"]
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}
FLAW_KINDS = ("slip", "operand", "skip", "compensate", "answer")
MAX_VALUE = 25

_EQ = re.compile(r"(-?\d+)\s*([+\-*/x×])\s*(-?\d+)\s*=\s*(-?\d+)")


def make_problem(rng: random.Random, pid: str, min_steps: int = 2, max_steps: int = 5, max_value: int = MAX_VALUE) -> Problem:
    """A story whose solution has between min_steps and max_steps computations, no value above max_value."""
    target = rng.randint(min_steps, max_steps)
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    quantities: list[int] = []
    nodes: list[dict] = []
    sentences: list[str] = []

    def q(v: int) -> list:
        quantities.append(v)
        return ["q", len(quantities) - 1]

    def node(op: str, a: list, b: list, say: str = "") -> list:
        va, vb = value_of(a), value_of(b)
        nodes.append({"op": op, "args": [a, b], "value": int(OPS[op](va, vb)), "say": say})
        return ["n", len(nodes) - 1]

    def value_of(ref: list) -> int:
        return quantities[ref[1]] if ref[0] == "q" else nodes[ref[1]]["value"]

    cur = q(rng.randint(2, 15))
    sentences.append(f"{name} has {quantities[-1]} {item}.")
    shared = False
    while len(nodes) < target:
        left = target - len(nodes)
        v = value_of(cur)
        kinds = ["find", "give", "times"] + (["packs"] if left >= 2 else [])
        if left == 1 and len(nodes) >= 1:
            kinds.append("share")
        kind = rng.choice(kinds)
        if kind == "packs":
            g, k = rng.randint(2, 5), rng.randint(2, 6)
            if v + g * k > max_value:
                continue
            sentences.append(f"{name} buys {g} packs of {k} {item}.")
            t = node("*", q(g), q(k), f"buys {g} packs of {k}")
            cur = node("+", cur, t, "in all")
        elif kind == "find":
            a = rng.randint(2, 9)
            if v + a > max_value:
                continue
            sentences.append(f"{name} finds {a} more.")
            cur = node("+", cur, q(a), f"finds {a} more")
        elif kind == "give":
            if v < 3:
                continue
            a = rng.randint(1, min(v - 1, 9))
            sentences.append(f"{name} gives away {a}.")
            cur = node("-", cur, q(a), f"gives away {a}")
        elif kind == "times":
            m = rng.randint(2, 3)
            if v * m > max_value:
                continue
            sentences.append(f"{name} gets {m} times as many.")
            cur = node("*", cur, q(m), f"gets {m} times as many")
        else:  # share: only as the last event, only when it divides evenly
            divisors = [d for d in range(2, 10) if v % d == 0 and v // d >= 1]
            if not divisors:
                continue
            d = rng.choice(divisors)
            sentences.append(f"{name} shares them equally among {d} friends.")
            cur = node("/", cur, q(d), f"shares among {d}")
            shared = True
    question = f"How many {item} does each friend get?" if shared else f"How many {item} does {name} have now?"
    answer = nodes[-1]["value"]
    return Problem(
        id=pid,
        source="toy",
        question=" ".join(sentences) + " " + question,
        gold_answer=str(answer),
        meta={"quantities": quantities, "nodes": nodes},
    )


def _node_operands(problem: Problem, n: dict) -> tuple[int, int]:
    qs, nodes = problem.meta["quantities"], problem.meta["nodes"]
    return tuple(qs[i] if k == "q" else nodes[i]["value"] for k, i in n["args"])  # type: ignore[return-value]


def _fmt(a: int, op: str, b: int, c: int, say: str = "") -> str:
    # Each step restates the event it computes ("gives away 6: 7 - 6 = 1"), as a model would
    # quote the problem; it also makes the toy policy's copying an induction task it learns fast.
    return f"{say}: {a} {op} {b} = {c}" if say else f"{a} {op} {b} = {c}"


def _final(eq: str, answer: int | str) -> str:
    return f"{eq}, so the answer is \\boxed{{{answer}}}."


def canonical_steps(problem: Problem) -> list[str]:
    nodes = problem.meta["nodes"]
    steps = []
    for n in nodes:
        a, b = _node_operands(problem, n)
        steps.append(_fmt(a, n["op"], b, n["value"], n.get("say", "")))
    steps[-1] = _final(steps[-1], nodes[-1]["value"])
    return steps


def canonical_solution(problem: Problem) -> str:
    return "\n\n".join(canonical_steps(problem))


@dataclass(frozen=True)
class Verdict:
    first_error: int  # -1 if every step is right
    kind: str | None  # slip / operand / unparseable / answer / empty
    final_correct: bool


def verify(problem: Problem, text: str | list[str]) -> Verdict:
    """Exact step check of any response text (or list of steps) against the problem's graph."""
    return check_steps(problem, text)[0]


def _show(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0")


def check_steps(problem: Problem, text: str | list[str], blind: frozenset[str] = frozenset()) -> tuple[Verdict, list[str]]:
    """The verdict, and the check a careful grader writes for each step up to the first wrong one.

    `blind`: kinds of flaw this grader overlooks ("operand": it never checks an operand against the
    question), so it writes the checks of a judge with that blind spot.

    A check redoes the step's computation and puts its own result beside the claimed one
    (`16 + 8 -> 24, claimed 25, wrong`), says which operand was never given or derived, or compares
    the boxed answer with the result. The toy judge learns to write these before its verdict, as
    the paper's judge analyses each paragraph before concluding (a judge that answers with the
    index alone never learned to check anything; see docs/study.md).
    """
    steps = split_steps(text) if isinstance(text, str) else list(text)
    gold = int(problem.meta["nodes"][-1]["value"])
    if not steps:
        return Verdict(0, "empty", False), []
    boxed_final = last_boxed(steps[-1])
    final_correct = boxed_final is not None and _as_int(boxed_final) == gold
    available = set(problem.meta["quantities"])
    # Nodes still to compute, each as (op, operand values, value); commutative ops match either order.
    todo = [(n["op"], _node_operands(problem, n), n["value"]) for n in problem.meta["nodes"]]
    derived: set[int] = set()
    checks: list[str] = []
    for i, step in enumerate(steps):
        eqs = _EQ.findall(step)
        boxed = last_boxed(step)
        notes: list[str] = []

        def wrong(kind: str, note: str, i: int = i, notes: list[str] = notes) -> tuple[Verdict, list[str]]:
            checks.append("; ".join([*notes, note + ", wrong"]))
            return Verdict(i, kind, final_correct), checks

        if not eqs and boxed is None:
            return wrong("unparseable", "no computation and no answer")
        for sa, op, sb, sc in eqs:
            a, b, c = int(sa), int(sb), int(sc)
            op = {"x": "*", "×": "*"}.get(op, op)
            if op == "/" and b == 0:
                return wrong("slip", f"{a} / 0 is undefined")
            true = OPS[op](a, b)
            if true != c:
                # `->`, not the paragraph's `=`: after `a op b =` the judge would find the claim right
                # there in its context and copy it (an induction pattern); `->` makes it compute.
                return wrong("slip", f"{a} {op} {b} -> {_show(true)}, claimed {c}")
            needed = any(nop == op and nv == c and ((na, nb) == (a, b) or (op in "+*" and (nb, na) == (a, b)))
                         for nop, (na, nb), nv in todo)
            if "operand" in blind and (a not in available or b not in available or not needed):
                # A grader blind to misread quantities (the toy judge's blind spot): it checks the
                # arithmetic only and takes the result as derived; the error surfaces, if at all, at the answer.
                available.add(c)
                derived.add(c)
                notes.append(f"{a} {op} {b} -> {c}, claimed {c}, ok")
                continue
            if a not in available or b not in available:
                return wrong("operand", f"{a} {op} {b} = {c}, but {a if a not in available else b} is neither given nor derived")
            match = next(
                (
                    j
                    for j, (nop, (na, nb), nv) in enumerate(todo)
                    if nop == op and nv == c and ((na, nb) == (a, b) or (op in "+*" and (nb, na) == (a, b)))
                ),
                None,
            )
            if match is None:  # a true computation, but not one this problem needs
                return wrong("operand", f"{a} {op} {b} = {c}, not a step this problem needs")
            todo[match] = ("done", (None, None), None)  # type: ignore[assignment]
            available.add(c)
            derived.add(c)
            notes.append(f"{a} {op} {b} -> {c}, claimed {c}, ok")
        # An answer is right only if it is the gold value and the steps have derived it.
        if boxed is not None:
            if gold not in derived:
                return wrong("answer", f"answer {boxed} before the last computation")
            if _as_int(boxed) != gold:
                return wrong("answer", f"answer {boxed}, the result is {gold}")
            notes.append(f"answer {boxed}, ok")
        if i == len(steps) - 1 and boxed_final is None:
            return wrong("answer", "no answer given")
        checks.append("; ".join(notes))
    return Verdict(-1, None, final_correct), checks


def _as_int(s: str) -> int | None:
    s = s.strip().rstrip(".")
    try:
        return int(s)
    except ValueError:
        try:
            f = float(s)
            return int(f) if f.is_integer() else None
        except ValueError:
            return None


# ---------------------------------------------------------------------------------------------
# Flawed solutions. Each returns (steps, first_error) where first_error is the verifier's answer;
# the generators are checked against the verifier in tests, not trusted.


def make_flawed(rng: random.Random, problem: Problem, kind: str, systematic: bool = False) -> tuple[list[str], int]:
    """A solution with one flaw of `kind`, and the step it is in.

    systematic: the policy's habits rather than noise: a wrong result or operand is always one
    too many, a wrong answer is the previous step's result. An LM trained on random slips spreads
    their probability over many values and sampling at temperature 0.7 all but removes them (a
    well-trained toy policy was 96-98% right with 25% flawed training solutions); one habitual
    value per flaw survives sampling, so the policy errs at a rate its training share sets.
    """
    nodes = problem.meta["nodes"]
    n = len(nodes)
    vals = [nd["value"] for nd in nodes]
    qs = problem.meta["quantities"]

    def write(values: list[int], operands: list[tuple[int, int]], results: list[int] | None = None) -> list[str]:
        results = results or values
        steps = [_fmt(a, nd["op"], b, r, nd.get("say", "")) for nd, (a, b), r in zip(nodes, operands, results)]
        steps[-1] = _final(steps[-1], results[-1])
        return steps

    def recompute(i0: int, new_val: int) -> tuple[list[int], list[tuple[int, int]]]:
        """Propagate a changed value at node i0 downstream, with correct arithmetic afterwards."""
        v = vals.copy()
        v[i0] = new_val
        ops = []
        for j, nd in enumerate(nodes):
            a, b = (qs[i] if k == "q" else v[i] for k, i in nd["args"])
            if j > i0:
                # Integer division keeps the text in the world's format; a wrong quotient here
                # comes after the first error anyway.
                v[j] = a // b if nd["op"] == "/" and b else int(OPS[nd["op"]](a, b))
            ops.append((a, b))
        return v, ops

    if kind == "slip":
        i = rng.randrange(n)
        wrong = vals[i] + (1 if systematic else rng.choice([-3, -2, -1, 1, 2, 3, 10, -10]))
        v, ops = recompute(i, wrong)
        res = [*vals[:i], wrong, *v[i + 1 :]]
        return write(v, ops, res), i
    if kind == "operand":
        i = rng.randrange(n)
        nd = nodes[i]
        a, b = _node_operands(problem, nd)
        if systematic:
            b2 = b + 1
        else:
            b2 = b + rng.choice([-2, -1, 1, 2]) if rng.random() < 0.5 or len(set(qs)) < 2 else rng.choice(qs)
        if b2 == b or b2 <= 0 or (nd["op"] == "/" and a % b2):
            b2 = b + 1 if nd["op"] != "/" else b
            if b2 == b:
                return make_flawed(rng, problem, "slip", systematic)
        wrong = int(OPS[nd["op"]](a, b2))
        v, ops = recompute(i, wrong)
        ops[i] = (a, b2)
        return write(v, ops), i
    if kind == "skip" and n >= 2:
        # Drop a non-final step; its consumer then uses a value nobody derived. The answer stays right.
        i = rng.randrange(n - 1)
        steps = canonical_steps(problem)
        consumer = next((j for j in range(i + 1, n) if ["n", i] in nodes[j]["args"]), None)
        if consumer is None:
            return make_flawed(rng, problem, "slip", systematic)
        del steps[i]
        return steps, consumer - 1
    if kind == "compensate" and n >= 2:
        # A slip at step i, and the next step that uses it "lands" on the right value again.
        cands = [i for i in range(n - 1) if any(["n", i] in nodes[j]["args"] for j in range(i + 1, n))]
        if not cands:
            return make_flawed(rng, problem, "slip", systematic)
        i = rng.choice(cands)
        consumer = next(j for j in range(i + 1, n) if ["n", i] in nodes[j]["args"])
        wrong = vals[i] + (1 if systematic else rng.choice([-2, -1, 1, 2]))
        ops = [_node_operands(problem, nd) for nd in nodes]
        ops[consumer] = tuple(wrong if (k, x) == ("n", i) else (qs[x] if k == "q" else vals[x]) for k, x in nodes[consumer]["args"])
        res = vals.copy()
        res[i] = wrong
        return write(vals, ops, res), i
    if kind == "answer":
        # Every computation right, but the boxed answer is another number.
        steps = canonical_steps(problem)
        if systematic:
            wrong = vals[-2] if n >= 2 and vals[-2] != vals[-1] else vals[-1] + 1
        else:
            wrong = rng.choice([x for x in [*qs, *vals[:-1], vals[-1] + 1] if x != vals[-1]] or [vals[-1] + 1])
        a, b = _node_operands(problem, nodes[-1])
        last = _fmt(a, nodes[-1]["op"], b, vals[-1], nodes[-1].get("say", ""))
        steps[-1] = _final(last, wrong)
        return steps, n - 1
    return make_flawed(rng, problem, "slip", systematic)


def sample_flaw_kind(rng: random.Random, mix: dict[str, float]) -> str:
    kinds = list(mix)
    return rng.choices(kinds, weights=[mix[k] for k in kinds])[0]


def make_problems(seed: int, n: int, prefix: str, min_steps: int = 2, max_steps: int = 5, hard_share: float = 0.0,
                  hard_max_steps: int = 8, hard_max_value: int = 60) -> list[Problem]:
    """`n` problems; a `hard_share` of them longer (up to `hard_max_steps`) than the toy models ever trained on,
    with values up to `hard_max_value` (larger numbers only where it exceeds MAX_VALUE, the normal cap; the study
    keeps it at the cap): the paper's hard problems, on which a completer often fails from a correct prefix, so
    MC estimation calls correct steps wrong. Whether a problem is
    hard comes from its own stream, so with hard_share 0 the problems are exactly those of old."""
    rng, hard_rng = random.Random(seed), random.Random(seed + 7_919_001)
    out = []
    for i in range(n):
        if hard_share and hard_rng.random() < hard_share:
            p = make_problem(rng, f"{prefix}-{i}", max(min_steps, max_steps), max(max_steps, hard_max_steps), hard_max_value)
            p.meta["hard"] = True
        else:
            p = make_problem(rng, f"{prefix}-{i}", min_steps, max_steps)
        out.append(p)
    return out


@dataclass(frozen=True)
class ToyWorldConfig:
    """Params `toy`: the study's problems. The toy models train on problems of its min_steps..max_steps
    (bootstrap@toy and train_judge@toy read only those two keys: a new world seed keeps the models)."""

    seed: int = 0
    n_train: int = 160
    n_eval: int = 64
    n_processbench: int = 240
    min_steps: int = 2
    max_steps: int = 5
    # The difficulty mix: a share of hard problems, longer than the models trained on (larger numbers
    # too only where hard_max_value exceeds MAX_VALUE), in every split; the completer often fails from a correct
    # prefix there.
    hard_share: float = 0.0
    hard_max_steps: int = 8
    hard_max_value: int = 60

    def __post_init__(self):
        check(2 <= self.min_steps <= self.max_steps <= 8, f"toy.min_steps ({self.min_steps}) and toy.max_steps ({self.max_steps}) must be within 2..8, min <= max")
        check(0 <= self.hard_share <= 1, "toy.hard_share must be in [0, 1]")
        check(self.max_steps <= self.hard_max_steps <= 12, "toy.hard_max_steps must be within max_steps..12")
        check(25 <= self.hard_max_value <= 999, "toy.hard_max_value must be within 25..999")
        for n in ("n_train", "n_eval", "n_processbench"):
            check(getattr(self, n) > 0, f"toy.{n} must be > 0")

    def problems(self, stream: int, n: int, prefix: str) -> list[Problem]:
        """`n` problems of the study's shape and mix from generator seed*1000 + stream: 1..3 the splits, 7 toy_human's;
        the models' training problems use toy_models.seed*1000 + 4..6, so no two streams ever coincide."""
        return make_problems(self.seed * 1000 + stream, n, prefix, self.min_steps, self.max_steps, self.hard_share,
                             self.hard_max_steps, self.hard_max_value)


def world_problems(cfg: ToyWorldConfig) -> dict[str, list[Problem]]:
    splits = {"train": (cfg.n_train, "train"), "eval": (cfg.n_eval, "eval"), "processbench": (cfg.n_processbench, "pb")}
    return {split: cfg.problems(stream, n, f"toy-{prefix}") for stream, (split, (n, prefix)) in enumerate(splits.items(), start=1)}


@dataclass(frozen=True)
class ProblemsInputs:
    """What stage problems@toy writes beside the problems it draws: the reference PRMs' identities its checks made
    (prmlab.core.manifest.references_manifest, which refuses a folder outside the graph in this profile)."""
    references: dict


def draw_problems(cfg: dict, data: ProblemsInputs, run) -> Done:
    """Stage problems@toy: the splits, the evaluation sets' problem texts (as inputs@real writes them: what
    training data must not contain), and the reference PRMs' identities (`data.references`)."""
    probs = world_problems(cfg["toy"])
    m = {f"{split}_problems": len(items) for split, items in probs.items()}
    m |= {f"{split}_hard_problems": sum(bool(p.meta.get("hard")) for p in items) for split, items in probs.items()}
    m["mean_steps"] = sum(len(p.meta["nodes"]) for items in probs.values() for p in items) / sum(map(len, probs.values()))
    texts = {"toy": [p.question for p in probs["eval"]], "processbench_toy": [p.question for p in probs["processbench"]]}
    return Done(m, ", ".join(f"{len(v)} {k}" for k, v in probs.items()),
                outputs={**{f"problems_dir/{split}.jsonl": items for split, items in probs.items()},
                         "problems_dir/eval_texts.json": texts, "references": data.references})
