"""The review bot (issue 32): feeds and series assembly, the jobs table and queue; to come: policy, outbox, workers' CLI."""
