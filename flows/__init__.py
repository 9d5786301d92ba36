"""Prefect orchestration of the DVC stages. Stages stay plain Python; flows only chain them."""
