"""Every file format the pipeline reads or writes: dataset, run files, tables."""
