"""The cluster model over rendered objects: which pods each state implies, which of them every
client path reaches at every sync-wave boundary of every transition, and the invariants those
serving graphs must keep (docs/invariants.md)."""
