"""The HTML report as pages: `report.html` the overview (the first screen, the verdicts, what
was run, the atlas), and one page per experiment, `pages/<experiment>.html`.

Cut from report.md's one rendered body at its `## Experiment` headings: an experiment's
section becomes its page, the overview keeps the rest and lists the pages where the sections
were. Every link follows its target: a `#fragment` whose id lives on another page points at
that page, a section's link (actions.anchor: `#experiment-<name>`) at its page, and a table
file named in the text (`tables/steps_adam.csv`, `compare/adam-f32.txt`) at its HTML page
when the pipeline wrote one, else at the file. Plots stay files beside the pages (an
embedded plot made the one page 10 MB), linked relative to each page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

# An experiment's section heading, as markdown renders experiment.py's `## Experiment `x``.
SECTION = re.compile(r'<h2 id="[^"]*">Experiment <code>([^<]+)</code>')
H2 = re.compile(r"<h2[ >]")
ID = re.compile(r'\sid="([^"]+)"')
HREF = re.compile(r'href="#([^"]+)"')
IMAGE = re.compile(r'<img alt="([^"]*)" src="([^"]+\.png)"')
FILE = re.compile(r"<code>((?:tables|compare)/[\w.-]+\.(?:csv|txt))</code>")
OVERVIEW = "report.html"


def page_path(name: str | None) -> str:
    """A page's path relative to results/: the overview, or an experiment's."""
    return OVERVIEW if name is None else f"pages/{name}.html"


def relative(target: str, here: str | None) -> str:
    """`target` (a path relative to results/) as a link from page `here`."""
    return target if here is None else "../" + target


def split(body: str) -> tuple[str, str, dict[str, str]]:
    """(the overview before the experiments, after them, {experiment: its section}), in
    order; an experiment's section runs to the next `<h2`."""
    starts = [m.start() for m in H2.finditer(body)]
    sections: dict[str, str] = {}
    before, after = [], []
    cut = [0, *starts, len(body)]
    for start, end in zip(cut, cut[1:], strict=False):
        chunk = body[start:end]
        found = SECTION.match(chunk)
        if found:
            sections[html.unescape(found.group(1))] = chunk
        elif sections:
            after.append(chunk)
        else:
            before.append(chunk)
    return "".join(before), "".join(after), sections


def table_link(path: str, names: list[str], results: Path) -> str:
    """The HTML page of a table file the pipeline rendered (html/<experiment>/<kind>.html),
    else the file itself; relative to results/."""
    stem = Path(path).stem
    if path.startswith("compare/"):  # compare/<experiment>-<dtype>.txt
        experiment, _, dtype = stem.rpartition("-")
        candidate = f"html/{experiment}/compare_{dtype}.html"
    else:  # tables/<kind>_<experiment>.csv, the longest experiment name that ends it
        owners = [n for n in names if stem.endswith("_" + n)]
        experiment = max(owners, key=len) if owners else ""
        candidate = f"html/{experiment}/{stem[: -len(experiment) - 1]}.html"
    return candidate if experiment and (results / candidate).is_file() else path


def linked(body: str, here: str | None, home: dict[str, str | None], names: list[str],
           results: Path) -> str:  # fmt: skip
    """The links of one page's body, each to where its target is (see the docstring)."""

    def fragment(match: re.Match) -> str:
        target = match.group(1)
        name = target.removeprefix("experiment-")
        if target.startswith("experiment-") and name in names:  # a section's (actions.anchor)
            return f'href="{relative(page_path(name), here)}"'
        owner = home.get(target, here)
        if owner == here:  # on this page, or nowhere: as it was
            return match.group(0)
        return f'href="{relative(page_path(owner), here)}#{target}"'

    def image(match: re.Match) -> str:
        return f'<img alt="{match.group(1)}" src="{relative(match.group(2), here)}"'

    def file(match: re.Match) -> str:
        target = relative(table_link(match.group(1), names, results), here)
        return f'<a href="{html.escape(target)}"><code>{match.group(1)}</code></a>'

    body = HREF.sub(fragment, body)
    body = IMAGE.sub(image, body)
    return FILE.sub(file, body)


def check_images(body: str, results: Path) -> None:
    """Every plot the report shows exists (a missing one fails, naming it)."""
    for match in IMAGE.finditer(body):
        path = results / html.unescape(match.group(2))
        if not path.is_file():
            raise FileNotFoundError(f"{path}: plot referenced by the report is missing")


def paginate(body: str, results: Path) -> tuple[str, dict[str, str]]:
    """(the overview's body, {experiment: its page's body}); the experiments' place in the
    overview lists their pages."""
    check_images(body, results)
    before, after, sections = split(body)
    names = list(sections)
    home: dict[str, str | None] = {i: None for i in ID.findall(before + after)}
    for name, section in sections.items():
        home |= dict.fromkeys(ID.findall(section), name)
    items = "".join(f'<li><a href="{page_path(n)}">{html.escape(n)}</a></li>\n' for n in names)
    listing = (
        '<h2 id="experiments">Experiments</h2>\n<p>Each experiment on a page of its own: its'
        " verdict and causes, the config diff, the step tables, where the difference enters"
        f" and the plots.</p>\n<ul>\n{items}</ul>\n"
        if names
        else ""
    )
    overview = linked(before + listing + after, None, home, names, results)
    back = f'<p><a href="../{OVERVIEW}">← the overview</a></p>\n'
    pages = {n: back + linked(s, n, home, names, results) for n, s in sections.items()}
    return overview, pages
