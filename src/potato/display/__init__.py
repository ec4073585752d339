"""What an item shows: its fields (text, dialogue, pdf, spreadsheet, ...) and the media files they name."""
