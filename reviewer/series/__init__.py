"""Load and parse: what the user named -> the series' mails -> patches (b4, unidiff, lore)."""
