# PyTorch ↔ Burn training-parity pipeline: does a port train the same, step for step?
# Stages live in workflow/rules/, programs in workflow/scripts/. See README.md.
import sys

from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


# Software comes from the uv-managed environment (uv.lock) and the locked Rust crate
# (rust/Cargo.lock), not from per-rule conda or container directives: `snakemake --lint`
# reports "Specify a conda environment or container for each rule" for that reason only.


configfile: "config.yaml"


# Checked before any job: one line per problem naming its key, then a stop without a
# traceback (bounds from the schema, the rest from workflow/scripts/parity_config.py). Fills
# in the schema's defaults (threads, report_steps) as snakemake.utils.validate would.
sys.path.insert(0, f"{workflow.basedir}/workflow/scripts")
from check_config import check_config, describe_source

if not workflow.modifier.skip_validation:
    check_config(
        config,
        f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
        describe_source(workflow.configfiles, workflow.config_settings.config),
    )


include: "workflow/rules/common.smk"
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
