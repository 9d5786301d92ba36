"""Process reward models: the Qwen2.5-Math-PRM model and its scorers (model), every released layout and the
generative verifiers behind one `load_prm` (layouts, generative), and PRM training with its params (training,
training_config)."""
