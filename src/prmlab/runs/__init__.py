"""The library side of the flows and the `prmlab` command: the study store (which study a commit holds, its pin,
the seed and sweep files), PRMs evaluated outside the graph (adhoc), and the project's processes."""
