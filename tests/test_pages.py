"""report/pages.py: the HTML report cut into the overview and one page per experiment, every
link following its target (a section, a heading on another page, a plot, a table file)."""

from __future__ import annotations

import pytest

from torch_burn_parity.report import pages

BODY = (
    '<h1 id="title">PyTorch ↔ Burn training parity</h1>\n'
    '<p>See <a href="#experiment-adam">adam</a> and <a href="#config-diff_1">its diff</a>.</p>\n'
    '<h2 id="verdicts">Verdicts</h2>\n<p>table</p>\n'
    '<h2 id="experiment-sgd-optimizer-sgd">Experiment <code>sgd</code> (optimizer: sgd)</h2>\n'
    '<p><a id="experiment-sgd"></a></p>\n<h3 id="config-diff">Config diff</h3>\n'
    '<p><a href="#config-diff">here</a>, <a href="#verdicts">back</a>,'
    " <code>tables/steps_sgd.csv</code>, <code>compare/sgd-f32.txt</code></p>\n"
    '<p><img alt="losses" src="plots/losses_sgd.png" /></p>\n'
    '<h2 id="experiment-adam-optimizer-adam">Experiment <code>adam</code> (optimizer: adam)</h2>\n'
    '<p><a id="experiment-adam"></a></p>\n<h3 id="config-diff_1">Config diff</h3>\n'
    '<p><code>tables/layers_adam.csv</code> <a href="#experiment-sgd">sgd</a></p>\n'
    '<h2 id="adam-bias-correction">Adam bias correction</h2>\n<p>after</p>\n'
)


@pytest.fixture
def results(tmp_path):
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots/losses_sgd.png").write_bytes(b"png")
    (tmp_path / "html/sgd").mkdir(parents=True)
    (tmp_path / "html/sgd/steps.html").write_text("steps")  # compare_f32 and adam's: none
    return tmp_path


def test_each_experiment_gets_a_page_and_the_overview_the_rest(results):
    overview, found = pages.paginate(BODY, results)
    assert list(found) == ["sgd", "adam"]
    assert "Verdicts" in overview and "Adam bias correction" in overview
    assert "Config diff" not in overview
    # the experiments' place lists their pages, in order, before what came after them
    listing = overview.index('<h2 id="experiments">Experiments</h2>')
    assert overview.index('href="pages/sgd.html"', listing) < overview.index("Adam bias")
    assert overview.index('href="pages/adam.html"', listing) > listing
    assert found["sgd"].startswith('<p><a href="../report.html">← the overview</a></p>')


def test_every_link_follows_its_target(results):
    overview, found = pages.paginate(BODY, results)
    # a section's link: to its page; a heading on another page: that page and fragment
    assert '<p>See <a href="pages/adam.html">adam</a>' in overview
    assert '<a href="pages/adam.html#config-diff_1">its diff</a>' in overview
    sgd, adam = found["sgd"], found["adam"]
    assert '<a href="#config-diff">here</a>' in sgd  # on the same page: as it was
    assert '<a href="../report.html#verdicts">back</a>' in sgd
    assert '<a href="../pages/sgd.html">sgd</a>' in adam
    # plots stay files, linked from where the page is
    assert '<img alt="losses" src="../plots/losses_sgd.png"' in sgd
    # a table file: its HTML page where the pipeline wrote one, else the file itself
    assert '<a href="../html/sgd/steps.html"><code>tables/steps_sgd.csv</code></a>' in sgd
    assert '<a href="../compare/sgd-f32.txt"><code>compare/sgd-f32.txt</code></a>' in sgd
    assert '<a href="../tables/layers_adam.csv"><code>tables/layers_adam.csv</code></a>' in adam


def test_a_missing_plot_is_named(results):
    (results / "plots/losses_sgd.png").unlink()
    with pytest.raises(FileNotFoundError, match="plots/losses_sgd.png: plot referenced"):
        pages.paginate(BODY, results)


def test_a_report_without_experiments_is_one_page(results):
    overview, found = pages.paginate('<h2 id="verdicts">Verdicts</h2>\n', results)
    assert found == {} and "Experiments" not in overview
