"""Where LLM text comes from: one generator interface over vLLM, transformers and OpenAI-compatible servers
(generation), their params (config), and where a stage's shards run, this process or a Ray cluster (cluster)."""
