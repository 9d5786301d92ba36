"""Released step-labelled data as PRM training sets: PRM800K (human labels) and Math-Shepherd (MC labels).

The paper's third label source is human annotation: its Table 4 row "human annotation (PRM800K)",
Qwen2.5-Math-7B-PRM800K (ProcessBench 56.5), and its Table 3 row "MC Math-Shepherd 440k" are PRMs
trained on these two releases. This module turns either file into the project's PRM examples
(records.PRMExample), the same records our own label sources produce, so `train_prm` treats them alike.

Inputs: a JSONL file, or a folder of them (read in name order), in one of two schemas:
- PRM800K (openai/prm800k, phase 1 and phase 2): `{labeler, timestamp, generation,
  is_quality_control_question, is_initial_screening_question, question{problem, ground_truth_answer,
  ...}, label{steps[{completions[{text, rating, flagged}], human_completion, chosen_completion}],
  total_time, finish_reason}}`, rating 1 / 0 / -1.
- Math-Shepherd (peiyi9979/Math-Shepherd): `{input, label, task}`; in `input` every step ends with
  the tag `ки`; `label` is the same text with each tag replaced by `+` (good) or `-` (bad).
Outputs: (examples, counts): PRMExample per usable row, and what was converted, skipped or cut.

Conversion rules (each one a choice; where it comes from):
- PRM800K rating 1 and 0 ("neutral") are positive, -1 negative: the Qwen2.5-Math-7B-PRM800K model
  card ("We treat the original 1 and 0 labels in PRM800K as our positive labels, while -1 as
  negative ones"), the PRM the paper reports as human annotation; OpenR does the same.
- A PRM800K trajectory is the labeller's path: at each step the `chosen_completion`. At a step where
  the labeller chose none (every completion rejected, or the task ended there: finish_reason
  found_error / give_up), the first completion rated -1 becomes the final step, labelled 0: that is the
  error the labeller caught, and in phase 2 the first completion is the policy's own step. A
  human-written `human_completion` is used only where no completion was rated -1 (it is a person's
  text, not a model's, so it never replaces a rejected model step).
- Steps after the first negative are dropped, as for our own labels (a PRM learns the first error).
  A chosen completion with no rating ends the trajectory there (its label is unknown).
- Quality-control and initial-screening rows (served to every labeller to check them, PRM800K's
  README) are skipped and counted; so is a row with no rated step.
- Math-Shepherd: the problem is the text before "Step 1:"; each step is the text between tags, its
  "Step k:" numbering cut (our PRM marks steps with its step token); `+` is 1, `-` is 0.
Bad input (neither schema, a rating outside -1/0/1, a chosen index out of range, no step tag, a label
that is not the input with its tags replaced) is a DataError naming the file, line and field.

Stage human_data@<source> is `read_human` then `human_examples`, run by prmlab.core.stage:
    python -m stages.human_data --source prm800k --file PATH --eval-texts data/problems/eval_texts.json --out data/human/prm800k.jsonl --metrics ...
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prmlab.core.io import DataError, iter_jsonl, read_json
from prmlab.core.params import ParamsError, read_params
from prmlab.core.records import PRMExample
from prmlab.core.result import Done
from prmlab.core.sources import HUMAN_SOURCES, TOY_HUMANS
from prmlab.core.steps import duplicate_key

SHEPHERD_TAG = "ки"
_STEP_NUMBER = re.compile(r"^Step \d+:\s*")


def check_sources(params: dict) -> None:
    """params `human_labels` ({source: path}) against `train_prm.sources`: known sources, a path each,
    and a file for every human source a PRM is trained on. The first stage of each profile calls it,
    so a missing file is named before any model loads, not at prm_data after hours of labelling."""
    human = params.get("human_labels") or {}
    if not isinstance(human, dict):
        raise ParamsError(f"human_labels: expected {{source: path}}, got {human!r}")
    for source, path in human.items():
        if source not in HUMAN_SOURCES:
            raise ParamsError(f"human_labels: unknown source {source!r} (known: {list(HUMAN_SOURCES)})")
        if not isinstance(path, str) or not path.strip():
            raise ParamsError(f"human_labels.{source}: expected the path of a {source} file or folder, got {path!r}")
    sources = (params.get("train_prm") or {}).get("sources") or []
    if (toy := next((s for s in sources if s in TOY_HUMANS), None)) and not (params.get("profile") or {}).get("toy"):
        raise ParamsError(f"train_prm.sources names {toy!r}, of the toy profile's PRM800K analogue; the paper "
                          "profile's human labels are prm800k (human_labels: {prm800k: PATH})")
    for source in HUMAN_SOURCES:
        if source in sources and source not in human:
            raise ParamsError(f"train_prm.sources names {source!r}, but params human_labels names no {source} file "
                              f"(human_labels: {{{source}: PATH}}; it is never fetched)")


def check_profile_sources(a, cfg: dict | None = None) -> dict:
    """check_sources on --params, by each profile's first stage (problems@toy, inputs@real); the params read."""
    raw = read_params(a.params)
    check_sources(raw)
    return raw


def _files(path: str | Path) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix == ".jsonl")
        if not files:
            raise DataError(f"{p}: a folder with no .jsonl file")
        return files
    if not p.exists():
        raise DataError(f"{p}: file not found")
    return [p]


def schema(row: object) -> str | None:
    """Which release a row looks like: 'prm800k', 'math_shepherd' or None."""
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("question"), dict) and isinstance(row.get("label"), dict):
        return "prm800k"
    if isinstance(row.get("input"), str) and isinstance(row.get("label"), str):
        return "math_shepherd"
    return None


def _rating(comp: dict, where: str, field: str):
    r = comp.get("rating") if isinstance(comp, dict) else None
    if not isinstance(comp, dict) or not isinstance(comp.get("text"), str):
        raise DataError(f"{where}: field '{field}': expected {{text, rating}}, got {str(comp)[:80]!r}")
    if r is not None and (isinstance(r, bool) or r not in (-1, 0, 1)):
        raise DataError(f"{where}: field '{field}.rating': {r!r} is not -1, 0 or 1")
    return r


def prm800k_example(row: dict, where: str, counts: Counter) -> PRMExample | None:
    """One PRM800K row as an example (None: a counted skip). `where` is 'file:line'."""
    if row.get("is_quality_control_question"):
        counts["skipped_quality_control"] += 1
        return None
    if row.get("is_initial_screening_question"):
        counts["skipped_screening"] += 1
        return None
    problem = row["question"].get("problem")
    if not isinstance(problem, str) or not problem.strip():
        raise DataError(f"{where}: field 'question.problem': expected the problem text")
    steps = row["label"].get("steps")
    if not isinstance(steps, list):
        raise DataError(f"{where}: field 'label.steps': expected a list of steps, got {type(steps).__name__}")
    # Every rating is checked, not only the ones the trajectory uses: a bad file fails loudly.
    # (A step with `completions: null` is where a labeller gave up: it has nothing to rate.)
    for i, s in enumerate(steps):
        if not isinstance(s, dict) or not isinstance(s.get("completions") or [], list):
            raise DataError(f"{where}: field 'label.steps[{i}].completions': expected a list")
        for j, c in enumerate(s.get("completions") or []):
            _rating(c, where, f"label.steps[{i}].completions[{j}]")
    texts: list[str] = []
    labels: list[int] = []
    for i, s in enumerate(steps):
        comps, chosen = s.get("completions") or [], s.get("chosen_completion")
        if chosen is not None:
            if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < len(comps):
                raise DataError(f"{where}: field 'label.steps[{i}].chosen_completion': {chosen!r} is not an index "
                                f"of its {len(comps)} completions")
            step, rating = comps[chosen]["text"], comps[chosen]["rating"]
            if rating is None:
                counts["cut_at_unrated_step"] += 1
                break
        else:
            rejected = next((c for c in comps if c["rating"] == -1), None)
            human = s.get("human_completion")
            if rejected is not None:
                step, rating = rejected["text"], -1
            elif isinstance(human, dict) and isinstance(human.get("text"), str):
                step, rating = human["text"], 1
                counts["human_written_steps"] += 1
            else:
                break
        texts.append(step)
        labels.append(0 if rating == -1 else 1)
        counts["neutral_steps_as_positive"] += rating == 0
        if rating == -1:
            counts["cut_after_first_error"] += i < len(steps) - 1
            break
    if not labels:
        counts["skipped_no_rated_step"] += 1
        return None
    counts[f"finish_{row['label'].get('finish_reason') or 'none'}"] += 1
    return PRMExample(prompt=problem, completions=texts, labels=labels, response_id=where.rsplit("/", 1)[-1])


def math_shepherd_example(row: dict, where: str, counts: Counter) -> PRMExample:
    """One Math-Shepherd row as an example. `where` is 'file:line'."""
    text, label = row["input"], row["label"]
    if SHEPHERD_TAG not in text:
        raise DataError(f"{where}: field 'input': no step tag {SHEPHERD_TAG!r} (Math-Shepherd ends every step with it)")
    head, sep, _ = text.partition("Step 1:")
    if not sep:
        raise DataError(f"{where}: field 'input': no 'Step 1:' where the problem ends and the steps begin")
    pieces = text.split(SHEPHERD_TAG)
    if pieces[-1].strip():
        raise DataError(f"{where}: field 'input': text after the last step tag: {pieces[-1][:60]!r}")
    marks, pos = [], 0
    for k, piece in enumerate(pieces[:-1]):
        if label[pos : pos + len(piece)] != piece or label[pos + len(piece) : pos + len(piece) + 1] not in ("+", "-"):
            raise DataError(f"{where}: field 'label': step {k + 1} is not the input's step followed by '+' or '-' "
                            f"(at character {pos})")
        marks.append(label[pos + len(piece)])
        pos += len(piece) + 1
    if label[pos:] != pieces[-1]:
        raise DataError(f"{where}: field 'label': text after the last label differs from the input's")
    steps = [piece.strip() for piece in (text[len(head):]).split(SHEPHERD_TAG)[:-1]]
    steps = [_STEP_NUMBER.sub("", s) for s in steps]
    labels = [1 if m == "+" else 0 for m in marks]
    if 0 in labels:
        first = labels.index(0)
        counts["cut_after_first_error"] += first < len(labels) - 1
        steps, labels = steps[: first + 1], labels[: first + 1]
    counts[f"task_{row.get('task') or 'none'}"] += 1
    return PRMExample(prompt=head.strip(), completions=steps, labels=labels, response_id=where.rsplit("/", 1)[-1])


def load_human(source: str, path: str | Path) -> tuple[list[PRMExample], dict[str, int]]:
    """Every row of a PRM800K or Math-Shepherd file (or folder of files) as examples, and counts."""
    if source not in HUMAN_SOURCES:
        raise DataError(f"{source!r} is not one of {list(HUMAN_SOURCES)}")
    convert = prm800k_example if source == "prm800k" else math_shepherd_example
    counts: Counter = Counter()
    out: list[PRMExample] = []
    for f in _files(path):
        for ln, row in iter_jsonl(f):
            where = f"{f}:{ln}"
            kind = schema(row)
            if kind != source:
                got = f"a {kind} row" if kind else f"neither schema (keys {sorted(row)[:6] if isinstance(row, dict) else type(row).__name__})"
                raise DataError(f"{where}: not a {source} row: {got}; human_labels.{source} must name a {source} file")
            counts["rows"] += 1
            ex = convert(row, where, counts)
            if ex is not None:
                out.append(ex)
    # The same labelled solution twice (a row repeated across shard files) is one example, counted (it
    # had trained and counted twice). The same text with other labels (another rater) is kept: that is data.
    seen, unique = set(), []
    for ex in out:
        k = (ex.prompt, tuple(ex.completions), tuple(ex.labels))
        if k in seen:
            counts["duplicate_rows_dropped"] += 1
        else:
            seen.add(k)
            unique.append(ex)
    out = unique
    counts["examples"] = len(out)
    counts["with_wrong_step"] = sum(0 in ex.labels for ex in out)
    counts["steps"] = sum(len(ex.labels) for ex in out)
    return out, dict(counts)


def drop_eval_problems(examples: list[PRMExample], eval_texts: dict[str, list[str]]) -> tuple[list[PRMExample], dict[str, int]]:
    """Drop examples whose problem's normalised text (prmlab.core.steps.duplicate_key) is an evaluation problem's.
    Counts per evaluation set (the first set naming a text owns it) and in total. Unlike our own
    training problems, repeats are kept: PRM800K labels many solutions of one problem."""
    owner: dict[str, str] = {}
    for name, texts in eval_texts.items():
        for t in texts:
            owner.setdefault(duplicate_key(t), name)
    removed = {f"removed_{name}": 0 for name in eval_texts}
    kept = []
    for ex in examples:
        name = owner.get(duplicate_key(ex.prompt))
        if name is None:
            kept.append(ex)
        else:
            removed[f"removed_{name}"] += 1
    removed["removed_total"] = len(examples) - len(kept)
    return kept, removed


@dataclass(frozen=True)
class HumanInputs:
    """What stage human_data@<source> works on, read and converted by `read_human`."""
    examples: list[PRMExample]  # the --file converted (load_human)
    counts: dict[str, int]  # what converting it counted: rows, skips by reason, cuts
    eval_texts: dict[str, list[str]]  # the evaluation sets' problem texts, by set
    file: str  # the released file


def read_human(a, cfg: dict) -> HumanInputs:
    """Stage human_data's inputs: the --file converted (load_human), the evaluation sets' problem texts, the file."""
    if a.source not in HUMAN_SOURCES:
        raise ParamsError(f"human_labels: unknown source {a.source!r} (known: {list(HUMAN_SOURCES)})")
    if not a.file:  # under dvc repro: the path params name (never pasted into DVC's shell command)
        a.file = (read_params(a.params).get("human_labels") or {}).get(a.source)
        if not isinstance(a.file, str) or not a.file:
            raise ParamsError(f"human_labels.{a.source}: no file named (and no --file given)")
    return HumanInputs(*load_human(a.source, a.file), read_json(a.eval_texts), a.file)


def human_examples(cfg: dict, data: HumanInputs, run) -> Done:
    """Stage human_data@<source>: the converted examples minus those on an evaluation problem, and counts
    of what was converted, skipped, cut and removed."""
    examples, counts, sets, file = data.examples, data.counts, data.eval_texts, data.file
    run.params({"file": file})
    kept, removed = drop_eval_problems(examples, sets)
    m = {**counts, "converted": counts["examples"], "converted_with_wrong_step": counts["with_wrong_step"], **removed,
         "examples": len(kept), "with_wrong_step": sum(0 in ex.labels for ex in kept)}
    skipped = {k: v for k, v in m.items() if k.startswith("skipped_") and v}
    return Done(m, f"{m['rows']} rows -> {len(examples)} examples"
                   + (f" (skipped: {', '.join(f'{k[8:]} {v}' for k, v in skipped.items())})" if skipped else "")
                   + (f"; {m['duplicate_rows_dropped']} repeated rows counted once" if m.get("duplicate_rows_dropped") else "")
                   + f"; {removed['removed_total']} share a problem with an evaluation set and were dropped; "
                   f"{len(kept)} kept ({m['with_wrong_step']} with a wrong step)", outputs={"out": kept})
