"""fitsync's rate-aware client of the Fitness Activity Service (OAuth, token rotation, shared rate budget)."""
