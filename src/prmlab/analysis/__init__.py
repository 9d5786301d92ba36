"""The study's measures, pure and model-free: metrics (each declared once), the bootstrap and verdicts, the paper's
numbers and the field's published rows, the findings, the confirmation protocol and the figures. Imports core only,
so an evaluation stage and the report compute a number the same way."""
