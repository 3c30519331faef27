# PyTorch ↔ Burn training-parity pipeline: does a port train the same, step for step?
# Stages live in workflow/rules/, the code they run in src/torch_burn_parity/. See README.md and docs/.
import sys

from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


# Software comes from the uv-managed environment (uv.lock) and the locked Rust crate
# (rust/Cargo.lock), not from per-rule conda or container directives: `snakemake --lint`
# reports "Specify a conda environment or container for each rule" for that reason only.


# The config: config.yaml, unless the command line names config files of its own
# (--configfile my.yaml): then those alone, so that one's own experiments run without the
# default ones (and every SLURM job, started with the same files, reads the same config).
# --config key=value changes either.

if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# The package is installed (editable) in the uv environment; this checkout's own src/ comes
# first, for this process and every job, so that a copy of the project (a test's, a second
# checkout) runs its own code.
SRC = f"{workflow.basedir}/src"
sys.path.insert(0, SRC)
from torch_burn_parity.tooling.code import put_first_for_jobs

put_first_for_jobs(SRC)
from torch_burn_parity.config.check_config import check_config, describe_source

# Checked before any job: one line per problem naming its key, then a stop without a
# traceback (bounds from the schema, the rest from config/parity_config.py). Fills in the
# schema's defaults (threads, report_steps) as snakemake.utils.validate would.

if not workflow.modifier.skip_validation:
    check_config(
        config,
        f"{SRC}/torch_burn_parity/config/config.schema.yaml",
        describe_source(workflow.configfiles, workflow.config_settings.config),
    )


include: "workflow/rules/common.smk"
include: "workflow/rules/code.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/build.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/sweeps.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/report.md",
        "results/report.html",
