"""What the catalog makes of the repository's files: recipes, the generated tables of the README and docs/, the workflows' branch lists."""
