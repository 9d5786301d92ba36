"""Every Markdown page prmlab writes, in one package (each reads figures computed elsewhere and formats them):

- study: the report stage's page (reports/report.md, .html, headline, figures), section by section;
- seeds: the seeds' pages (reports/seeds.md: per-seed and across-seed tables, why a verdict is open);
- tables: `prmlab eval`'s Tables 6 and 7 for PRMs evaluated outside the graph;
- benchmarks: reports/benchmarks.md from the benchmarks' JSON files, with the issues' target tables.
"""
