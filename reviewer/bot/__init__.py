"""The review bot (issue 32): feeds and series assembly, the jobs table and queue, the per-list policy, commands and
etiquette, the outbox and Patchwork checks, its configuration and `review bot status|enqueue`; to come: run, worker, replay."""
