"""The review bot: feeds, series assembly, policy, the jobs table and queue, workers, outbox (issue 32)."""
