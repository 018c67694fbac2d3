"""The review bot: feeds, series assembly, and (to come) policy, jobs, queue, workers, outbox."""
