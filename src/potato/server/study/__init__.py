"""A study's views: its pages (consent, instructions, training, surveys), a crowd participant's
arrival and done page, and the roster an admin pays by."""
