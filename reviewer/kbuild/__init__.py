"""Compiling a kernel tree: the private source checkout of a cache (srctree) and make in the sandbox (make)."""
