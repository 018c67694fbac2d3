"""What the tool keeps between runs under the XDG cache and state directories."""
