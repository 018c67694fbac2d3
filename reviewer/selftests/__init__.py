"""The selftest stage: choose the kselftests a series makes relevant, build and run them, benchmark."""
