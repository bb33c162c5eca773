"""Manager policies: the deterministic `rules` validity checker (more come with the LLM issue)."""
