"""What a difference means: verdicts, causes and their thresholds."""
