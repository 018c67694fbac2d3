"""The review bot (issue 32): feeds (a public-inbox mirror, a lei search) and series assembly, the per-list policy,
commands and etiquette, the jobs table and queue, the outbox and Patchwork checks, metrics, `review bot` run,
worker, status, enqueue and replay, and the read-only dashboard `review bot serve` (issue 33: web.py, dashboard.py,
revisions.py)."""
