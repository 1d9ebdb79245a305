"""What to build where: the matrix, the runner inventory, input fingerprints, changes since a commit, green records, recipe discovery."""
