"""The variant selector page: detect's answers for every question it can ask, and the HTML."""
