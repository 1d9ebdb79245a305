"""The shared ground: errors, the one subprocess wrapper, file writing, retries, and the adapters to git, the GitHub API and the Actions runner."""
