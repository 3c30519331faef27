"""What a person reads: the Markdown and HTML reports, plots, provenance, sweep summaries."""
