"""The review bot (issue 32): feeds and series assembly, the jobs table and queue, the outbox and Patchwork checks,
its configuration and `review bot status|enqueue`; to come: policy, and the run, worker and replay commands."""
