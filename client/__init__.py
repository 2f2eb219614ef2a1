"""fitsync's rate-aware client of the Fitness Activity Service: HTTP, OAuth, token rotation, the shared rate budget,
the settings and the token key. Its tokens, budget and subscription are kept in the state store through the
repositories of `state/` (client writes no SQL).

May import: state.
"""
