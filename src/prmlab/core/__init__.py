"""What every stage shares, below everything else: records and their JSONL I/O, params, steps and grading, the
stage runner and its recorder, credentials, provenance, model manifests and the checks run before a model loads.
Imports nothing from the other packages (the toy world's exact verifier aside: grading checks toy answers with it).
A package file loads nothing, so a stage's DVC deps are only the modules it imports."""
