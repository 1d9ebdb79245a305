"""Publishing to a Flox organisation and the GitHub release."""
