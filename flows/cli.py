"""`prmlab`: the few commands a researcher types, thin over the stages and flows (no second implementation).

    prmlab run [--stages sample label_mc ...]       # the study: the Prefect flow over `dvc repro` (as make repro)
    prmlab eval PRM [PRM ...] [--layout L] [--reference M] [--name NAME] [--only processbench|bon|prmbench] [--out DIR]
                                                    # PRM folders or hub names, any layout of the paper's Table 7, on
                                                    # ProcessBench and Best-of-N (or PRMBench), outside the DVC graph
    prmlab score --benchmark processbench|prmbench FILE [--threshold T | --threshold-subset S] [--data PATH]
                                                    # official metrics of any tool's step scores, as JSON
    prmlab metrics                                  # the verdicts, then the headline numbers (reports/)
    prmlab ui [--port 5000] [--workers 1]            # MLflow's UI on the study's store, with links that open its runs

`eval` runs the graph's eval stages on each PRM with the graph's evaluation inputs, one MLflow run per PRM (its
stages' runs nested), and writes DIR/NAME/ and DIR/table.{md,json} (prmlab.runs.adhoc); `score` prints the official
numbers as JSON (prmlab.pipeline.scorefile); `ui` writes MLflow views opening on the study's runs (prmlab.report.dashboards).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from prmlab.core.io import DataError
from prmlab.core.params import ParamsError
from prmlab.core.provenance import tracking_uri
from prmlab.core.tracking import check_store
from prmlab.report.dashboards import headline_text, ui_links
from prmlab.runs.processes import interrupt_on_sigterm, venv_tool


def port(text: str) -> int:
    """argparse type: a TCP port (1-65535), refused before anything starts (70000 had given a traceback, exit 0)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a TCP port (1-65535)")
    return n


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return n


def ui(host: str, port: int, workers: int = 1) -> None:
    try:  # the store answers, as MLflow's, within its bound (a refusing one had cost 249 s of retries and a traceback)
        check_store()
    except ParamsError as e:
        print(f"prmlab ui: {e}", file=sys.stderr)  # one line on stderr, exit 2 as a bad input
        sys.exit(2)
    links = ui_links(host, port)
    print("prmlab ui: open the study's runs at\n  " + "\n  ".join(f"{k}: {u}" for k, u in links.items()), flush=True)
    os.execv(mlflow := venv_tool("mlflow"), [mlflow, "ui", "--backend-store-uri", tracking_uri(), "--host", host,
                                             "--port", str(port), "--workers", str(workers)])


# The real ProcessBench (Qwen/ProcessBench's <subset>.json) where the project's data sits beside the checkout.
REAL_PROCESSBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "processbench"


def score(benchmark: str, path: str, data: str | None, threshold: float | None, subset: str | None, params: Path) -> dict:
    """`prmlab score`: the library computes (prmlab.pipeline.scorefile); this prints one JSON object, or one error line."""
    from prmlab.pipeline.scorefile import score_command  # deferred: torch (prms.layouts, through prmbench)

    try:
        res = score_command(benchmark, path, data, threshold, subset, params, REAL_PROCESSBENCH)
    except (DataError, ParamsError) as e:
        sys.exit(f"prmlab score: {e}")
    print(json.dumps(res))
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="prmlab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the study (Prefect flow over dvc repro)")
    r.add_argument("--stages", nargs="*", default=None, help="stage groups, e.g. sample label_mc (default: all)")
    r.add_argument("--project-dir", default=".")
    e = sub.add_parser("eval", help="evaluate PRM folders or hub names on ProcessBench and/or Best-of-N")
    e.add_argument("prm", nargs="+", help="PRM checkpoint folders or hub names (e.g. Qwen/Qwen2.5-Math-PRM-7B)")
    e.add_argument("--name", default=None, help="its name in the results, for one PRM (default: the folder's or model's name)")
    e.add_argument("--layout", default=None, help="the PRMs' layout (prmlab.prms.layouts: qwen, math_shepherd, rlhflow, skywork, "
                                                  "orm, eurus; generative verifiers, prmlab.prms.generative: genprm, rprm, "
                                                  "thinkprm, toy_judge, one vote per step with the family's sampling "
                                                  "unless --votes/--temperature say otherwise); default: read from each checkpoint)")
    e.add_argument("--reference", default=None, help="layout eurus: the reference model (default Qwen/Qwen2.5-Math-7B-Instruct)")
    e.add_argument("--votes", type=int, default=None, help="a generative --layout: sampled replies per step (maj@k; a "
                                                           "step's score is the share calling it correct; default 1)")
    e.add_argument("--temperature", type=float, default=None,
                   help="a generative --layout: sampling temperature (default: the family's, from its inference code)")
    e.add_argument("--only", choices=["processbench", "bon", "prmbench"], default=None,
                   help="one benchmark (default: processbench and bon; prmbench only when named)")
    e.add_argument("--out", default=None, help="results folder (default runs/eval-NAME, or runs/eval for several PRMs)")
    e.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    s = sub.add_parser("score", help="official ProcessBench / PRMBench metrics of per-step scores from any tool")
    s.add_argument("file", help='JSONL: one {"id": ..., "step_scores": [...]} row per item')
    s.add_argument("--benchmark", choices=["processbench", "prmbench"], required=True)
    s.add_argument("--threshold", type=float, default=None,
                   help="ProcessBench: default tuned on --threshold-subset; PRMBench: default 0.5 (the harness's)")
    s.add_argument("--threshold-subset", default=None,
                   help="ProcessBench: the subset the threshold is tuned on (default: params eval_processbench.threshold_subset)")
    s.add_argument("--data", default=None, help="the benchmark's items (default: ../shared/data/processbench, else the toy "
                                                "study's data/processbench/items.jsonl; PRMBench: params eval_prmbench.data)")
    s.add_argument("--params", default=os.environ.get("PRMLAB_PARAMS", "params.yaml"))
    u = sub.add_parser("ui", help="MLflow's UI on the study's store; prints links that open its runs table")
    u.add_argument("--host", default="127.0.0.1")
    u.add_argument("--port", type=port, default=5000)
    u.add_argument("--workers", type=positive, default=1, help="server processes (MLflow's default 4; one serves one person)")
    m = sub.add_parser("metrics", help="print the study's verdicts, then the headline numbers")
    m.add_argument("--file", default="reports/headline.json")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        from flows.pipeline import pipeline  # deferred: prefect, which the other commands skip

        interrupt_on_sigterm()
        pipeline(project_dir=a.project_dir, stages=a.stages)
    elif a.cmd == "eval":
        from prmlab.runs import adhoc  # deferred: torch (prmlab.prms.layouts), which the other commands skip

        try:
            adhoc.evaluate(a.prm, a.name, a.layout, a.reference, a.only, a.out, Path(a.params), a.votes, a.temperature)
        except (ParamsError, DataError) as err:  # before any model loads: one line naming the flag or the input
            sys.exit(f"prmlab eval: {err}")
        except adhoc.StageFailed as err:  # the stage said why on its own stderr
            sys.exit(err.returncode)
    elif a.cmd == "score":
        score(a.benchmark, a.file, a.data, a.threshold, a.threshold_subset, Path(a.params))
    elif a.cmd == "ui":
        ui(a.host, a.port, a.workers)
    else:
        try:
            print(headline_text(Path(a.file)))
        except DataError as err:
            sys.exit(f"prmlab metrics: {err}")


if __name__ == "__main__":
    main()
