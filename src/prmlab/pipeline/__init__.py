"""The study's stages' cores, in pipeline order: the real data (data), sampling, labelling (labeling: MC and the
judge; label_methods: the newer ones; human_labels: PRM800K and Math-Shepherd), the training sets and consensus
(training_sets), the evaluations (processbench, prmbench, bon, scorefile), the biases (bias) and the ceiling. Each
core takes values and returns a `Done`; `stages/<name>.py` is its command line."""
