rule make_data:
    """One model's dataset file, shared by both trainers: inputs and initial weights
    (parameters and buffers), rounded to f32 once."""
    input:
        code=script_code("make_data"),
        # a port's dataset file is its weights and data files (models/port.py)
        port=lambda w: port_files(w.model),
    output:
        "results/data/{model}.safetensors",
    log:
        "results/logs/make_data/{model}.log",
    # Run cold, not through the warm server (tooling/warm.py): it needs numpy, not PyTorch
    # (0.2 s), and every training waits for it, the Burn one included, which would
    # otherwise wait for the server's first start (3-4 s of imports).
    shell:
        "python workflow/scripts/make_data.py --model {wildcards.model}"
        " --out {output} > {log} 2>&1"


rule experiment_spec:
    """One experiment's trainer settings, written from params so edits rerun only its chain."""
    output:
        "results/specs/{experiment}.json",
    log:
        "results/logs/specs/{experiment}.log",
    params:
        spec=lambda w: trainer_spec(w.experiment),
    run:
        write_json(output[0], params.spec, log[0])
