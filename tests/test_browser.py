"""What a person sees in a real browser: the parity report page and the Snakemake report.

Drives Debian's Chromium (`/usr/bin/chromium`, installed by ci/pipeline.sh) with Playwright;
Playwright's own browser download is never used. Set CHROMIUM to use another binary.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from pipeline_helpers import snakemake

# Flags for a sandboxed, offline machine: no sandbox as root, no background connections.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    path = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not path:
        pytest.fail("no Chromium found: install Debian's `chromium` package (ci/pipeline.sh does)")
    return path


@pytest.fixture(scope="module")
def page():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser.new_page(viewport={"width": 1400, "height": 1000})
        browser.close()


def assert_plot_rendered(frame_or_page) -> None:
    """A plot of the page, a PNG file beside it, loaded and shown within 1,400 px."""
    plot = frame_or_page.locator("img[src$='.png']").first
    plot.scroll_into_view_if_needed()
    expect(plot).to_be_visible()
    assert plot.evaluate("img => img.complete && img.naturalWidth > 100")
    assert plot.evaluate("img => img.naturalWidth") <= 1400


def test_parity_report_page_shows_verdicts_tables_and_plots(pipeline, page):
    page.goto((pipeline / "results/report.html").as_uri())
    expect(page.get_by_role("heading", name="Verdicts")).to_be_visible()
    # the verdict table (after "What to change"): seven columns, the last "gap / floor"
    verdicts = page.locator("table", has=page.get_by_role("columnheader", name="gap / floor"))
    verdicts.scroll_into_view_if_needed()
    expect(verdicts).to_be_visible()
    expect(verdicts.get_by_role("cell", name="equivalent up to rounding")).to_be_visible()
    expect(
        verdicts.get_by_role("cell", name="algorithmic difference, explained").first
    ).to_be_visible()
    assert verdicts.locator("th").count() == 7
    width = page.evaluate("document.documentElement.clientWidth")
    assert verdicts.bounding_box()["width"] <= width  # no column off the right edge
    # each row links its experiment's page
    verdicts.get_by_role("link", name="adam", exact=True).click()
    heading = page.get_by_role("heading", name="Experiment adam (optimizer: adam)")
    expect(heading).to_be_in_viewport()
    assert page.url.endswith("results/pages/adam.html")
    assert_plot_rendered(page)
    # a table file named in the section opens its HTML page, every step
    page.get_by_role("link", name="tables/steps_adam.csv").click()
    expect(page.get_by_role("columnheader", name="f64_f64")).to_be_visible()
    assert page.url.endswith("results/html/adam/steps.html")
    # the overview's contents list the experiments' pages, and each page leads back
    page.goto((pipeline / "results/report.html").as_uri())
    page.locator(".toc").get_by_role("link", name="Experiments").click()
    listing = page.locator("h2#experiments ~ ul").first
    listing.get_by_role("link", name="adam", exact=True).click()
    expect(heading).to_be_in_viewport()
    page.get_by_role("link", name="← the overview").click()
    expect(page.get_by_role("heading", name="Verdicts")).to_be_visible()


def test_the_first_screen_says_the_counts_and_what_changes_the_outcome(pipeline, page):
    """The small config: 4 experiments, its two with Burn's defaults (momentum dampening,
    Adam epsilon) change the loss; the headline says so above the contents, in the first
    screen, and the verdict table's effect column is there."""
    page.goto((pipeline / "results/report.html").as_uri())
    counts = page.get_by_text(re.compile(r"^4 experiments: .*equivalent up to rounding"))
    expect(counts).to_be_in_viewport()
    outcome = page.get_by_text(re.compile(r"(changes the outcome of training in|No difference)"))
    expect(outcome.first).to_be_in_viewport()
    contents = page.locator("text=Contents").first.bounding_box()["y"]
    assert contents > counts.bounding_box()["y"]
    # what to change comes before the contents: the first screen's action list
    change = page.get_by_role("heading", name="What to change")
    assert change.bounding_box()["y"] < contents
    header = page.get_by_role("columnheader", name="effect on training (f32)")
    header.scroll_into_view_if_needed()
    expect(header).to_be_visible()


def test_snakemake_report_lands_on_the_verdicts_and_shows_the_parity_report(pipeline: Path, page):
    snakemake(pipeline, "--report", "results/snakemake_report.html")
    page.goto((pipeline / "results/snakemake_report.html").as_uri())
    landing = page.locator("table").first
    expect(landing).to_be_visible()
    expect(landing.get_by_role("cell", name="equivalent up to rounding")).to_be_visible()
    # The parity report is the first result category and shows inline, not as a download.
    page.locator("li > a", has_text="1. Parity report").click()
    row = page.locator("tr", has_text="results/report.html")
    row.locator("a[iconname='eye']").click()
    report = page.frame_locator("iframe").first
    expect(report.get_by_role("heading", name="Verdicts")).to_be_visible()
    expect(report.locator("table").first).to_be_visible()
    # A full table page (every step) shows inline too.
    page.goto((pipeline / "results/snakemake_report.html").as_uri())
    page.locator("li > a", has_text=re.compile(r"^adam$")).click()  # the category menu
    page.locator("li > a", has_text=re.compile(r"^tables$")).click()
    row = page.locator("tr", has_text="results/html/adam/steps.html")
    row.locator("a[iconname='eye']").click()
    steps = page.frame_locator("iframe").first
    expect(steps.locator("table")).to_be_visible()
    expect(steps.get_by_role("columnheader", name="f64_f64")).to_be_visible()
