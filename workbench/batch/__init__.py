"""Scale-out: scoring through a provider's batch API."""
