"""What the catalog makes of the repository's files: recipes, the README's tables, the workflows' branch lists."""
