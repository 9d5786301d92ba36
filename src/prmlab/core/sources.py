"""The label sources a PRM can be trained on: their names only, so that every layer can read them
(the trainer's config, the training sets, the human-label converters) without importing the others.

- `SOURCES`: made in this pipeline from the policy's own responses (label_mc, label_judge, consensus;
  `oracle` and `outcome` from the toy world's verifier).
- `HUMAN_SOURCES`: released step labels, converted by stage human_data (prmlab.pipeline.human_labels).
- `TOY_HUMAN`: the toy profile's PRM800K analogue, written by stage toy_human@toy (prmlab.toy.annotators).
- `TOY_HUMAN_CONTROLS`: its controls, written beside it: `human_onpolicy`, the same annotator on
  the policy's own responses (as many solutions, the same picking and noise), and `human_exact`, the same
  off-policy solutions with the verifier's labels. Against `human`, each isolates one of the ways the toy's
  human labels differ from the judge's: off-policy solutions, and the annotator's noise.
- `consensus_soft` and `judge_matched`: two one-factor controls on labels the study already makes. The first is
  MC's soft labels on exactly the responses consensus keeps (Fig. 3-4's hard vs soft *after* filtering, beside
  `consensus`, MC's hard labels there); the second the judge's labels on exactly the policy responses that
  `human_onpolicy` labels (the toy world's human - judge gap without the set's size and epochs).
- `SOFT`: the sources whose PRMs train on MC's soft values (a regression loss), not on 0/1 labels.
- `METHODS`: the field's newer labelling methods, each a source made by its own stage, label_method@<source>
  (prmlab.pipeline.label_methods): `mc_agree` (two-model agreement filter), `judge_ref` (reference-guided judge),
  `judge_active` (uncertainty-selected judging). None is in the committed study (its protocol fixes its sources).
- `CEILING`: the name of the oracle PRM that stage ceiling@toy trains at the budget that meets the exact-label targets (prmlab.report.study.meets_exact_label_targets).
"""

SOURCES = ("mc_hard", "mc_soft", "judge", "consensus", "consensus_soft", "judge_matched", "oracle", "outcome")
SOFT = ("mc_soft", "consensus_soft")
HUMAN_SOURCES = ("prm800k", "math_shepherd")
TOY_HUMAN = "human"
TOY_HUMAN_CONTROLS = ("human_onpolicy", "human_exact")
TOY_HUMANS = (TOY_HUMAN, *TOY_HUMAN_CONTROLS)  # every source stage toy_human@toy writes
METHODS = ("mc_agree", "judge_ref", "judge_active")  # stage label_method@<source> writes data/labels/methods/<source>.jsonl
KNOWN = SOURCES + HUMAN_SOURCES + TOY_HUMANS + METHODS
CEILING = "oracle_ceiling"  # not a source: the oracle PRM at the ceiling's budget (stage ceiling@toy), scored beside them
