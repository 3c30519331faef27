# Names, wildcard constraints and config helpers shared by every stage.

EXPERIMENTS = list(config["experiments"])
FRAMEWORKS = ["torch", "burn"]
DTYPES = ["f32", "f64"]
SCRIPTS = "workflow/scripts"
# Modules imported by the scripts: inputs of every rule whose script imports them.
IO_MODULE = f"{SCRIPTS}/parity_io.py"
CONFIG_MODULE = f"{SCRIPTS}/parity_config.py"
GAPS_MODULE = f"{SCRIPTS}/gaps.py"
VERDICT_MODULE = f"{SCRIPTS}/verdict.py"

DEFAULT_TOLERANCE = {"f32": 1e-6, "f64": 1e-12}


wildcard_constraints:
    experiment="|".join(EXPERIMENTS),
    dtype="f32|f64",


def trainer_spec(experiment):
    """What the trainers need of one experiment, as a config of that experiment alone.

    Passed through params: changing one experiment's hyperparameters reruns that
    experiment's chain only, where depending on config.yaml would rerun everything.
    """
    exp = {
        k: v for k, v in config["experiments"][experiment].items() if k != "tolerance"
    }
    return {
        "steps": config["steps"],
        "batch_size": config["batch_size"],
        "threads": config["threads"],
        "experiments": {experiment: exp},
    }


def tolerance(experiment, dtype):
    own = config["experiments"][experiment].get("tolerance", {})
    return own.get(
        dtype, config.get("tolerance", {}).get(dtype, DEFAULT_TOLERANCE[dtype])
    )


def adam_experiments():
    return [e for e in EXPERIMENTS if config["experiments"][e]["optimizer"] == "adam"]


def run_files(experiment):
    return {
        f"{fw}_{dt}": f"results/runs/{experiment}/{fw}-{dt}.json"
        for fw in FRAMEWORKS
        for dt in DTYPES
    }
