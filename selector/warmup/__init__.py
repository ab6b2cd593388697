"""One-time compile set-up begun early so the first decision does not wait for it."""
