"""A study's config: its pages (phases) and crowdsourcing."""
