"""Build dvc_plots_offline.html: DVC's plot page with Vega, Vega-Lite and Vega-Embed inlined, so
`dvc plots show` draws without network (DVC's own page loads them from a CDN and, offline, shows
nothing but the PNGs). .dvc/config names it (`plots.html_template`). Rebuild after a version bump:

    cd vendor/vega && npm pack vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2 && python build.py

The versions are DVC's own (dvc_render/vega.py's SCRIPTS). The placeholders `{plot_divs}` and
`{refresh_tag}` are filled by dvc_render with str.replace, so the scripts' braces are safe.
Licenses: BSD-3-Clause, University of Washington Interactive Data Lab (LICENSE, kept in this folder).
"""

import tarfile
from pathlib import Path

HERE = Path(__file__).parent
PACKAGES = [("vega-5.20.2.tgz", "package/build/vega.min.js"), ("vega-lite-5.2.0.tgz", "package/build/vega-lite.min.js"),
            ("vega-embed-6.18.2.tgz", "package/build/vega-embed.min.js")]


def main() -> None:
    scripts = []
    for tgz, member in PACKAGES:
        with tarfile.open(HERE / tgz) as t:
            js = t.extractfile(member).read().decode()
        if "</script" in js:
            raise SystemExit(f"{tgz}: {member} contains '</script': it cannot be inlined as is")
        scripts.append(f"<script type=\"text/javascript\">/* {tgz[:-4]} */\n{js}\n</script>")
    page = ("<!DOCTYPE html>\n<html>\n<head>\n    {refresh_tag}\n    <meta charset=\"utf-8\">\n    <title>prmlab: DVC plots</title>\n"
            + "\n".join(scripts)
            + "\n    <style>\n        body { font-family: sans-serif; }\n        table { border-spacing: 15px; }\n    </style>\n"
              "</head>\n<body>\n    {plot_divs}\n</body>\n</html>\n")
    (HERE / "dvc_plots_offline.html").write_text(page)
    print(f"wrote {HERE / 'dvc_plots_offline.html'} ({len(page) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
