"""The embedded toy profile: a synthetic arithmetic world with exact step checking, its tokenizer,
and tiny Qwen2 models trained from scratch (policy and judge). See `world.py` first."""
