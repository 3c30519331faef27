"""Process helpers around the jobs: the warm interpreter, stale locks and reports."""
