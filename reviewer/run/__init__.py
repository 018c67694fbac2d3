"""Running what a series brings and ending cleanly: the sandbox, private files, deadlines, signals."""
