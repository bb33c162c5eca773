"""eval package (filled by later issues; depends only on stateguard)."""
