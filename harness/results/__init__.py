"""The results store: run dirs and their listing, imported histories, the release gate."""
