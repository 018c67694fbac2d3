"""The user's kernel tree: git, the base tree the checks read, MAINTAINERS."""
