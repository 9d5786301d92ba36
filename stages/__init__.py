"""One module per DVC stage, run as `python -m stages.<name>`; see dvc.yaml for the graph."""
