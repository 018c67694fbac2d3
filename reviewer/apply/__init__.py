"""Apply the series to an isolated worktree, and remember the outcome."""
