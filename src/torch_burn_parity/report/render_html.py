"""Render the Markdown report and the CSV tables as self-contained HTML pages.

    python -m torch_burn_parity.report.render_html --report results/report.md \\
        --out results/report.html --records results/verdicts.json \\
        --verdicts results/verdicts.html --tables results/tables/steps_adam.csv … \\
        --tables-out results/html/steps_adam.html …

- `report.html`: the overview of report.md (the first screen, the verdicts, what was run,
  the atlas) with a contents list, and one page per experiment, `pages/<experiment>.html`
  (report/pages.py): its section, plots as files beside the pages, table files linked to
  their HTML pages.
- one HTML page per CSV table (every step, every column) or compare output, so the
  Snakemake report shows them inline where it would only offer a download;
- `verdicts.html`: every experiment's verdict and its cause, from results/verdicts.json, a
  fragment the Snakemake report's landing page includes (workflow/report/workflow.rst).
"""

from __future__ import annotations

import argparse
import html
import io
import json
import re
import sys
from pathlib import Path

import markdown
import pandas as pd

from torch_burn_parity.io.parity_io import read_table_text, write_text_atomic
from torch_burn_parity.report import pages
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.headline import effect_cell

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 76rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.45; color: #1b1b1b; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; display: block;
        overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #c8c8c8; padding: 0.2rem 0.5rem; text-align: left; }
th { background: #f0f0f0; }
td.num { white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
pre { background: #f6f6f6; padding: 0.6rem; overflow-x: auto; font-size: 0.85rem; }
code { font-size: 0.9em; }
img { max-width: 100%; }
.toc { background: #f6f8fa; border: 1px solid #dde; padding: 0.4rem 1rem; }
"""

# A table cell holding one number, optionally followed by a word ('3.84e-06 MISMATCH'):
# kept on one line, where browsers would break '3.19e-15' at its hyphen.
NUMBER_CELL = re.compile(r"<td(?: style=\"[^\"]*\")?>(-?[\d.]+(?:e[-+]\d+)?(?: \w+)?)</td>")


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def report_pages(report_md: Path) -> tuple[str, dict[str, str]]:
    """report.md as the overview page, with a table of contents, and a page per experiment
    (report/pages.py): (the overview, {experiment: its page})."""
    converter = markdown.Markdown(extensions=["tables", "fenced_code", "toc"])
    text = report_md.read_text(encoding="utf-8")
    body = NUMBER_CELL.sub(r'<td class="num">\1</td>', converter.convert(text))
    title = text.splitlines()[0].lstrip("# ").strip() if text else "report"
    overview, sections = pages.paginate(body, report_md.parent)
    # The contents after the first screen's text (the intro, the headline and what to
    # change), before the next section: the overview's sections.
    headings = re.findall(r'<h2 id="([^"]+)">(.*?)</h2>', overview)
    toc = (
        '<div class="toc"><span class="toctitle">Contents</span><ul>\n'
        + "".join(f'<li><a href="#{i}">{re.sub("<[^>]+>", "", h)}</a></li>\n' for i, h in headings)
        + "</ul></div>\n"
    )
    first_section = overview.find("<h2")
    if overview.startswith('<h2 id="what-to-change"', first_section):
        first_section = overview.find("<h2", first_section + 1)
    at = first_section if first_section >= 0 else overview.find("</h1>") + len("</h1>")
    overview = overview[:at] + toc + overview[at:]
    return page(title, overview), {
        name: page(f"{name}: {title}", body) for name, body in sections.items()
    }


def verdict_fragment(records: Path) -> str:
    """Each experiment's verdict and its cause or where it starts, from results/verdicts.json
    (judgement/judge.py's records), as an HTML table for the landing page."""
    try:
        experiments = json.loads(records.read_text(encoding="utf-8"))["experiments"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{records}: not a verdicts file ({exc})") from None
    lines = [
        "| experiment | verdict | effect on training (f32) | cause, or where it starts |",
        "| --- | --- | --- | --- |",
    ]
    for record in experiments:
        cells = [record["experiment"], record["verdict"], effect_cell(record),
                 vt.verdict_detail(record) or "—"]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return markdown.markdown("\n".join(lines), extensions=["tables"]) + "\n"


def table_page(source: Path) -> str:
    """A CSV table as an HTML table (every row), or a text output as preformatted text."""
    title = f"<h1>{html.escape(source.stem)}</h1>\n"
    if source.suffix != ".csv":
        return page(source.stem, f"{title}<pre>{html.escape(source.read_text())}</pre>")
    frame = pd.read_csv(io.StringIO(read_table_text(source)), keep_default_na=False)
    table = frame.to_html(index=False, border=0, float_format=lambda x: f"{x:.6g}")
    note = f"<p>All {len(frame)} rows of <code>{html.escape(source.name)}</code>.</p>"
    return page(source.stem, f"{title}{note}\n{table}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="report.md, rendered to --out")
    parser.add_argument("--out", type=Path, help="report.html")
    parser.add_argument(
        "--pages", type=Path, help="the folder of the experiments' pages (<name>.html)"
    )
    parser.add_argument("--records", type=Path, help="verdicts.json, rendered to --verdicts")
    parser.add_argument("--verdicts", type=Path, help="the landing page's verdict table")
    parser.add_argument("--tables", nargs="*", type=Path, default=[], help="CSV or text files")
    parser.add_argument("--tables-out", nargs="*", type=Path, default=[], help="one per CSV")
    args = parser.parse_args(argv)
    if len(args.tables) != len(args.tables_out):
        parser.error(f"{len(args.tables)} --tables but {len(args.tables_out)} --tables-out")
    if bool(args.report) != bool(args.out) or bool(args.records) != bool(args.verdicts):
        parser.error("--report goes with --out, --records with --verdicts")
    renders = []
    if args.report:
        renders.append((args.out, report_pages, args.report))
    if args.records:
        renders.append((args.verdicts, verdict_fragment, args.records))
    renders += [(out, table_page, s) for s, out in zip(args.tables, args.tables_out, strict=True)]
    written = {}
    for out, render, source in renders:
        try:
            if render is report_pages:
                overview, experiments = report_pages(source)
                written[out] = overview
                pages_dir = args.pages or out.parent / "pages"
                written |= {pages_dir / f"{n}.html": p for n, p in experiments.items()}
            else:
                written[out] = render(source)
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            # One line naming the file: `render_html: path: problem`.
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            where = "" if str(source) in problem else f"{source}: "
            sys.exit(f"render_html: {where}{problem}")
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    report = "".join(f"{p}, " for p in (args.out, args.verdicts) if p)
    experiments = len(written) - len(renders)
    tables = len(args.tables)
    print(f"render_html: {report}{experiments} experiment page(s), {tables} table page(s)")


if __name__ == "__main__":
    main()
