# The code each workflow script runs, as one digest per script: a rule lists its script and
# this digest among its inputs (script_code in common.smk), so that an edit of any module
# the script imports reruns the rule.


rule code_digest:
    """The sha256 of a workflow script and of every file of the package it runs
    (tooling/code.py). It reruns, and with it every rule reading it, whenever one of them
    is newer than it: editing a module reruns exactly the jobs whose code imports it."""
    input:
        lambda w: script_files(f"workflow/scripts/{w.script}.py"),
    output:
        "results/code/{script}.sha256",
    log:
        "results/logs/code/{script}.log",
    localrule: True
    run:
        write_code_digest(input, output[0], log[0])
