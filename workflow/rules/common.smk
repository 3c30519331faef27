# Names, wildcard constraints and config helpers shared by every stage.
import os
import re
import sys

# snakemake.io.report under another name: a line starting with `report(` would be read
# as the `report:` keyword.
from snakemake.io import report as mark_for_report

from torch_burn_parity.config import cpu_path
from torch_burn_parity.config.resolve import experiment_spec
from torch_burn_parity.config.parity_config import (
    HYPERPARAMETERS,
    MODELS,
)
from torch_burn_parity.config.sweeps import expand_all
from torch_burn_parity.config.proving import proving_runs
from torch_burn_parity.config.data_problems import experiment_data
from torch_burn_parity.datasets.registry import dataset_stem
from torch_burn_parity.models.port import register_ports
from torch_burn_parity.models.model_specs import spec_of_config
from torch_burn_parity.io.parity_io import write_atomic
from torch_burn_parity.tooling.code import code_digest, script_files
from torch_burn_parity.tooling.exit_timers import cancel_pending_timers
from torch_burn_parity.tooling.slurm_cores import cap_cores
from torch_burn_parity.tooling.stale_lock import clear_stale_locks
from torch_burn_parity.tooling.stale_report import remove_stale_report

# A lock left by a killed run would stop this one; see tooling/stale_lock.py.
# Only the main Snakemake: one started inside a cluster job cannot see the main one's
# process and would take its live lock for a stale one.
if workflow.is_main_process:
    clear_stale_locks()

# Jobs may cache compiled bytecode: where PYTHONDONTWRITEBYTECODE is set, every job would
# otherwise recompile the PyTorch and pandas sources it imports (torch import 4.4 s → 2.3 s).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# PyTorch's libraries read their kernel-path variables once, when they start: set them here,
# before any job (or the warm server that forks the Python jobs) starts, so every job of
# this run takes the config's cpu_path (config/cpu_path.py).
cpu_path.apply(config.get("cpu_path", cpu_path.DEFAULT))

# Sweeps become experiments before anything else reads the config (config/sweeps.py);
# their names are stable, so a changed axis reruns only the new points.
SWEEPS = expand_all(config, HYPERPARAMETERS)
config.setdefault("experiments", {})
for _points in SWEEPS.values():
    config["experiments"].update({name: exp for name, exp, _ in _points})
# Each experiment that leaves values to Burn's defaults gets its proving run, the same
# with PyTorch's values passed to Burn (config/proving.py), unless prove_fixes is false.
if config.get("prove_fixes", True):
    _swept = {name for _points in SWEEPS.values() for name, _, _ in _points}
    config["experiments"].update(proving_runs(config["experiments"], _swept))
EXPERIMENTS = list(config["experiments"])

# Your own ports (models/port.py), known by name here and in every job (the environment).
PORTS = register_ports(config["experiments"])
FRAMEWORKS = ["torch", "burn"]
DTYPES = ["f32", "f64"]


# Each rule that runs Python runs one thin script of workflow/scripts/ (its inputs list it
# and the digest of the package's files it imports: script_code below), most of them as
# `python -m torch_burn_parity.tooling.warm workflow/scripts/X.py args`, which does what
# `python workflow/scripts/X.py args` does in a process forked from a warm interpreter that
# has already imported PyTorch, pandas and matplotlib (see tooling/warm.py): 0.05 s to
# start a job instead of 2-4 s. PARITY_WARM=0 runs every script cold; under SLURM cold is
# the default.


def script_code(name):
    """A workflow script (workflow/scripts/NAME.py) and the digest of every file of the
    package it runs, as workflow/rules/code.smk writes it. A rule's inputs, so that an
    edit of any of them reruns it."""
    return [f"workflow/scripts/{name}.py", f"results/code/{name}.sha256"]


def job_json(wildcards, input, output, log, **params):
    """A workflow script's one argument: its rule's wildcards, input, output, log and
    params by name, as JSON (tooling/stages.py reads it). The code's files are left out:
    they are inputs for Snakemake's sake, not the script's."""
    import json

    return json.dumps(
        {
            "wildcards": dict(wildcards.items()),
            "input": {name: v for name, v in input.items() if name != "code"},
            "output": dict(output.items()),
            "log": log,
            "params": params,
        }
    )


# The analyse job's logs: the job's own (one line per stage), and one per stage.
ANALYSE_LOGS = {
    name: f"results/logs/analyse/{{experiment}}/{name}.log"
    for name in [
        "job",
        "compare",
        "steps_table",
        "config_diff",
        "replay",
        "probe",
        "plots",
        "lrs_table",
        "layers_table",
        "burn_local",
        "render_html",
        "judge",
    ]
}


DEFAULT_TOLERANCE = {"f32": 1e-6, "f64": 1e-12}


def write_json(path, data, log):
    """Write a small JSON file through a temporary file and a rename (never half-written)."""
    import json, os

    tmp = f"{path}.tmp"
    Path(tmp).write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)
    Path(log).write_text(f"wrote {path}\n")


def write_code_digest(files, path, log):
    """The sha256 of each of `files` (tooling/code.py's code_digest), written whole."""
    write_atomic(path, code_digest(files).encode())
    Path(log).write_text(f"{path}: {len(files)} files\n")


# Names as the schema allows them (an alternation of every experiment's name would be
# compiled into each rule's patterns: a second of a no-op run for a hundred experiments).
# The trainers' specs and the report's and sweeps' JSONs live in different folders, so no
# file matches two rules; a target for an experiment the config lacks stops at
# settings() with its name.
wildcard_constraints:
    experiment="[A-Za-z][A-Za-z0-9_]*",
    dtype="f32|f64",
    sweep="[A-Za-z][A-Za-z0-9_]*",
    # a model's name, then its size keys when not the default (model_specs.model_tag)
    model="(" + "|".join([*MODELS, *PORTS]) + ")(-[a-z_]+[0-9]+)*",
    port="[a-z][a-z0-9_]*",
    script="[a-z_]+",


def settings(experiment):
    """One experiment's entry of the config; a clear error for a name it does not have."""
    if experiment not in config["experiments"]:
        known = ", ".join(EXPERIMENTS[:8]) + (", …" if len(EXPERIMENTS) > 8 else "")
        raise ValueError(
            f"no experiment {experiment!r} in the config ({len(EXPERIMENTS)}: {known})"
        )
    return config["experiments"][experiment]


def trainer_spec(experiment):
    """One experiment resolved: the spec both trainers run as it is (config/resolve.py).

    Passed through params: changing one experiment's hyperparameters reruns that
    experiment's chain only, where depending on config.yaml would rerun everything.
    """
    return experiment_spec(config, experiment).as_dict()


def dataset(experiment):
    """The dataset file of the experiment's data and model at its size: its inputs and
    initial weights (named by the model's tag: `transformer`, `transformer-d_model256-…`,
    `lenet`; datasets/registry.py dataset_stem)."""
    exp = settings(experiment)
    stem = dataset_stem(experiment_data(exp), spec_of_config(exp.get("model")))
    return f"results/data/{stem}.safetensors"


def port_of(experiment):
    """The experiment's port (models/port.py), None for a built-in model."""
    return PORTS.get(spec_of_config(settings(experiment).get("model")).name)


def burn_binary(experiment):
    """The Burn trainer of the experiment: parity-train, or its port's own binary."""
    port = port_of(experiment)
    return f"results/bin/ports/{port.name}" if port else "results/bin/parity-train"


def port_check(experiment):
    """The file check_port writes once both sides take the experiment's port: an input of
    its trainings, so that none starts on a port either side refuses; [] for a built-in
    model."""
    port = port_of(experiment)
    return [f"results/ports/{port.name}.checked"] if port else []


def port_experiment(port):
    """The first experiment that trains `port`: its spec and dataset are the port's check's."""
    return next(e for e in EXPERIMENTS if port_of(e) and port_of(e).name == port)


def port_files(model):
    """A port's weights and data files (what its dataset file is made of); [] otherwise."""
    port = PORTS.get(model)
    return [port.init, port.data] if port else []


def port_sources(wildcards):
    """A port's crate (its manifest, lock file and Rust sources) and the trainer library it
    calls: an edit to either rebuilds the port's binary."""
    crate = Path(PORTS[wildcards.port].crate)
    own = [crate / "Cargo.toml", crate / "Cargo.lock"]
    own += sorted(
        p for p in crate.rglob("*.rs") if "target" not in p.relative_to(crate).parts
    )
    library = [
        "rust/Cargo.toml",
        "rust/build.rs",
        *sorted(Path("rust/src").rglob("*.rs")),
    ]
    return [str(p) for p in own] + library


def port_module(wildcards):
    """A port's own PyTorch module: the Python files under its `torch.path` folder (none
    for a library's model, which the environment's lock file pins): an edit to one reruns
    the port's check, and through it every training and analysis of the port."""
    folder = PORTS[wildcards.port].path
    if folder is None:
        return []
    return sorted(
        str(p) for p in Path(folder).rglob("*.py") if "__pycache__" not in p.parts
    )


def datasets():
    """The dataset file of every model the experiments train."""
    return sorted({dataset(e) for e in EXPERIMENTS})


def model_sizes():
    """One line per model the experiments train: its tag, size and parameter count."""
    models = {
        m.tag: m
        for m in (spec_of_config(settings(e).get("model")) for e in EXPERIMENTS)
    }
    return [
        f"model {m.tag}: {m.param_count:,} parameters"
        for m in sorted(models.values(), key=lambda m: (m.param_count, m.tag))
    ]


# A dry run (-n, --dry-run) says what each model weighs before anything runs. (Snakemake
# knows it is a dry run only after the Snakefile is read: the command line says it first.)
if any(
    a in ("--dry-run", "--dryrun") or re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", a)
    for a in sys.argv
):
    print("\n".join(model_sizes()), file=sys.stderr)


def tolerance(experiment, dtype):
    own = settings(experiment).get("tolerance", {})
    return own.get(
        dtype, config.get("tolerance", {}).get(dtype, DEFAULT_TOLERANCE[dtype])
    )


def adam_experiments():
    return [e for e in EXPERIMENTS if config["experiments"][e]["optimizer"] == "adam"]


def run_files(experiment):
    """The experiment's four run files (JSON), by {framework}_{dtype}."""
    return {
        f"{fw}_{dt}": f"results/runs/{experiment}/{fw}-{dt}.json"
        for fw in FRAMEWORKS
        for dt in DTYPES
    }


# A run is its JSON and the tensors file beside it (io/run_tensors.py).
RUN_EXTENSIONS = ("json", "safetensors")


def tensor_files(experiment):
    """The tensors files of the experiment's four runs."""
    return [
        f.removesuffix(".json") + ".safetensors" for f in run_files(experiment).values()
    ]


def probe_option(experiment):
    """--parameter for the gradient probe, when the experiment names one (a list of
    arguments)."""
    parameter = settings(experiment).get("probe")
    return ["--parameter", parameter] if parameter else []


def report_inputs(wildcards):
    """Every file the report reads."""
    per_experiment = [
        "results/compare/{experiment}-f32.txt",
        "results/compare/{experiment}-f64.txt",
        "results/tables/steps_{experiment}.csv",
        "results/tables/steps_{experiment}.md",
        "results/tables/config_diff_{experiment}.csv",
        "results/tables/config_diff_{experiment}.md",
        "results/tables/replay_{experiment}.csv",
        "results/tables/replay_{experiment}.md",
        "results/tables/counterfactual_{experiment}.csv",
        "results/tables/counterfactual_{experiment}.md",
        "results/tables/probe_{experiment}.csv",
        "results/tables/probe_{experiment}.md",
        "results/tables/lrs_{experiment}.csv",
        "results/tables/lrs_{experiment}.md",
        "results/tables/layers_{experiment}.csv",
        "results/tables/layers_{experiment}.md",
        "results/plots/layers_{experiment}.png",
        "results/plots/gaps_{experiment}.png",
        "results/plots/losses_{experiment}.png",
        "results/specs/{experiment}.json",  # the resolved spec (config/spec.py)
    ]
    sweeps = [
        f"results/sweeps/{{sweep}}/{name}"
        for name in ("summary.csv", "summary.md", "parity_map.png")
    ]
    return {
        "sweeps": expand(sweeps, sweep=list(SWEEPS)),
        "config": "results/specs/report/config.json",
        "provenance": "results/provenance.json",
        "verdicts": "results/verdicts.json",
        "bias": [
            "results/tables/bias_correction.csv",
            "results/tables/bias_correction.md",
        ],
        "runs": [f for e in EXPERIMENTS for f in run_files(e).values()],
        "tensors": [f for e in EXPERIMENTS for f in tensor_files(e)],
        "per_experiment": expand(per_experiment, experiment=EXPERIMENTS),
    }


# Every table of an experiment as an HTML page for the Snakemake report, written by the
# experiment's own `analyse` job: (table kind or compare dtype, caption). A page per table in
# one report-wide job would give that job n inputs and n outputs, and Snakemake reads its
# metadata once per output: a no-op run of a large sweep then grew with n².
TABLE_PAGES = {
    "steps": "steps",
    "config_diff": "config_diff",
    "replay": "replay",
    "counterfactual": "replay",
    "probe": "probe",
    "lrs": "lrs",
    "layers": "layers",
}


def experiment_pages(experiment="{experiment}"):
    """(source table, its HTML page, caption) of one experiment's pages."""
    pages = [
        (
            f"results/tables/{kind}_{experiment}.csv",
            f"results/html/{experiment}/{kind}.html",
            caption,
        )
        for kind, caption in TABLE_PAGES.items()
    ]
    pages += [
        (
            f"results/compare/{experiment}-{dt}.txt",
            f"results/html/{experiment}/compare_{dt}.html",
            "compare",
        )
        for dt in DTYPES
    ]
    return pages


def experiment_page_outputs():
    """The analyse job's pages, each marked for the Snakemake report under its experiment."""
    return [
        mark_for_report(
            page,
            caption=f"../report/{caption}.rst",
            category="{experiment}",
            subcategory="tables",
        )
        for _, page, caption in experiment_pages()
    ]


BIAS_PAGE = ("results/tables/bias_correction.csv", "results/html/bias_correction.html")


def report_sources():
    """Every file the report and its HTML pages are built from (see stale_report.py)."""
    files = [*datasets(), "results/report.md"]
    for value in report_inputs(None).values():
        files += [value] if isinstance(value, str) else value
    return files + [BIAS_PAGE[0]]


# Under SLURM, a group job asks for the CPUs of its jobs side by side, up to --cores: no
# more than the largest node has (see tooling/slurm_cores.py), or it would wait forever.
onstart:
    cap_cores(workflow)


# After a failed job, a report whose sources are now missing would look up to date to the
# next run (see tooling/stale_report.py): remove it, so that run rebuilds it all.
onerror:
    remove_stale_report(
        [
            "results/report.md",
            "results/report.html",
            "results/verdicts.html",
            "results/pages",
        ],
        report_sources(),
    )
    cancel_pending_timers()


# The scheduler's pending wake-ups would hold the exit for up to a second after the last
# job (see tooling/exit_timers.py).
onsuccess:
    cancel_pending_timers()


def sweep_spec(sweep):
    """What the sweep summary needs: each experiment's name and axis values."""
    return {
        "sweep": sweep,
        "experiments": [
            {"experiment": name, "axes": point} for name, _, point in SWEEPS[sweep]
        ],
    }


def verdict_record(experiment):
    """One experiment's verdict record, written by its analyse job (judgement/judge.py)."""
    return f"results/verdicts/{experiment}.json"


def sweep_records(sweep):
    """The verdict records of every experiment of one sweep."""
    return [verdict_record(name) for name, _, _ in SWEEPS[sweep]]
