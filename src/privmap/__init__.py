"""privmap: privacy-preserving mappings against inference attacks (see privmap.offline, privmap.device)."""
